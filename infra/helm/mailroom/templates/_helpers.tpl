{{/* Names and labels shared by every template. */}}
{{- define "mailroom.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "mailroom.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Selector labels of one service; call with (dict "root" $ "name" $name). */}}
{{- define "mailroom.selectorLabels" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .name }}
{{- end -}}

{{- define "mailroom.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The Secret every pod reads: the operator's (existingSecret) or, for trying the chart, devSecret. */}}
{{- define "mailroom.secretName" -}}
{{- if .Values.existingSecret -}}
{{- .Values.existingSecret -}}
{{- else if .Values.devSecret -}}
{{- printf "%s-dev-secrets" (include "mailroom.fullname" .) -}}
{{- else -}}
{{- fail "set existingSecret to the name of a Secret holding DATABASE_URL, REDIS_URL, CURSOR_SECRET and SMTP_RELAY_URL" -}}
{{- end -}}
{{- end -}}

{{/* A service autoscaled by KEDA on its queue (else by an HPA on CPU, else fixed replicas). */}}
{{- define "mailroom.scaledByKeda" -}}
{{- if and .svc.autoscaling.enabled (eq (.svc.autoscaling.type | default "cpu") "queue") .root.Values.keda.enabled -}}true{{- end -}}
{{- end -}}

{{- define "mailroom.scaledByHpa" -}}
{{- if and .svc.autoscaling.enabled (eq (.svc.autoscaling.type | default "cpu") "cpu") -}}true{{- end -}}
{{- end -}}
