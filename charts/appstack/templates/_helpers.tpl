{{/*
The standard labels of every object of the chart (generated: appstack.manifests.chart_labels).
The operator's own objects keep app.kubernetes.io/name: appstack-operator (what its Deployment,
metrics Service and PodDisruptionBudget select) with appstack.commonLabels; every other
object is app.kubernetes.io/name: {{ .Chart.Name }}.
*/}}
{{- define "appstack.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
{{ include "appstack.commonLabels" . }}
{{- end }}

{{- define "appstack.commonLabels" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: appstack
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}
