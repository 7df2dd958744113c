{{/*
The standard labels of every object of the chart (generated: appstack.manifests.chart_labels).
The operator's own objects are app.kubernetes.io/name: its name (appstack-operator in release
"appstack"; what its Deployment, metrics Service and PodDisruptionBudget select) with
appstack.commonLabels; every other
object is app.kubernetes.io/name: {{ include "appstack.name" . }} (the chart's name or
nameOverride).
*/}}
{{- define "appstack.labels" -}}
app.kubernetes.io/name: {{ include "appstack.name" . }}
{{ include "appstack.commonLabels" . }}
{{- end }}

{{/*
The labels of every object (the operator's too), then the commonLabels value.
*/}}
{{- define "appstack.commonLabels" -}}
{{ include "appstack.helmLabels" . }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
Helm's standard labels alone: where more labels of the object (podLabels, metrics.*.labels)
are merged over commonLabels.
*/}}
{{- define "appstack.helmLabels" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: appstack
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Names, as Helm's starter chart makes them (generated: appstack.manifests.chart_names).
appstack.fullname starts every object's name; release "appstack" gives "appstack", so the
objects keep their names (appstack-operator, appstack-operator-<namespace>, ...). At most
46 characters: <fullname>-operator-metrics (a Service) stays a DNS label.
*/}}
{{- define "appstack.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 46 | trimSuffix "-" }}
{{- end }}

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

{{/*
The operator's Deployment, Roles, PodDisruptionBudget and leader-election Lease.
*/}}
{{- define "appstack.operatorName" -}}
{{- printf "%s-operator" (include "appstack.fullname" .) }}
{{- end }}

{{/*
The ServiceAccount the operator runs as, which its bindings and FlowSchema name.
*/}}
{{- define "appstack.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "appstack.operatorName" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}
