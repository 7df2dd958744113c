{{/* Generated from the operator's install (appstack.sdk.chart). */}}

{{/* The chart's name, or nameOverride. */}}
{{- define "appstack.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 46 | trimSuffix "-" }}
{{- end }}

{{/*
What every object's name starts with: fullnameOverride; else the release name if it contains
the chart's name; else <release>-<name>. At most 46 characters, so that the longest
Service name stays a DNS label.
*/}}
{{- define "appstack.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 46 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 46 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 46 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* What selects this release's operator pods (never another release's). */}}
{{- define "appstack.selectorLabels" -}}
app.kubernetes.io/name: {{ include "appstack.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Kubernetes' recommended labels beside the name and the instance. */}}
{{- define "appstack.releaseLabels" -}}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: appstack
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The labels of every object: Kubernetes' recommended ones, then commonLabels. */}}
{{- define "appstack.labels" -}}
app.kubernetes.io/name: {{ include "appstack.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{ include "appstack.releaseLabels" . }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
The operator's pods' labels: their selector's and Kubernetes' recommended ones (podLabels and
commonLabels are added by the Deployment).
*/}}
{{- define "appstack.podLabels" -}}
{{ include "appstack.selectorLabels" . }}
{{ include "appstack.releaseLabels" . }}
{{- end }}

{{/* helm test's Pod's labels: the labels, the name <name>-test (no pod selector takes it). */}}
{{- define "appstack.testLabels" -}}
{{- $name := printf "app.kubernetes.io/name: %s\n" (include "appstack.name" .) }}
{{- $test := printf "app.kubernetes.io/name: %s-test\n" (include "appstack.name" .) }}
{{- include "appstack.labels" . | replace $name $test }}
{{- end }}

{{/*
The operator's ServiceAccount: serviceAccount.name; else, when the chart creates it,
<fullname>-operator.
*/}}
{{- define "appstack.serviceAccountName" -}}
{{- if .Values.serviceAccount.name }}
{{- .Values.serviceAccount.name }}
{{- else if .Values.serviceAccount.create }}
{{- include "appstack.fullname" . }}-operator
{{- else }}
{{- fail "serviceAccount.create=false needs serviceAccount.name (the one to run as)" }}
{{- end }}
{{- end }}
