{{/*
The standard labels of every object of the chart (generated: appstack.manifests.chart_labels).
app.kubernetes.io/name is the operator's, as its Deployment's selector has it.
*/}}
{{- define "appstack.labels" -}}
app.kubernetes.io/name: appstack-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: appstack
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}
