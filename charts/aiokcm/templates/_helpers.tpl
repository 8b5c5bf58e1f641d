{{- define "aiokcm.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "aiokcm.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "aiokcm.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "aiokcm.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "aiokcm.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- /*
"true" when the --controllers list (.requested) enables .controller (name, aliases, enabledByDefault), with
kube-controller-manager's grammar as manager/cli/controllers_flag.py reads it: the first explicit mention of
the name or an alias ("name" or "-name") decides; otherwise "*" enables the controllers on by default.
*/ -}}
{{- define "aiokcm.controllerEnabled" -}}
{{- $names := prepend (.controller.aliases | default list) .controller.name -}}
{{- $decision := "" -}}
{{- $star := false -}}
{{- range .requested -}}
{{- $item := trim (toString .) -}}
{{- if not $decision -}}
{{- if eq $item "*" -}}
{{- $star = true -}}
{{- else if has $item $names -}}
{{- $decision = "on" -}}
{{- else if and (hasPrefix "-" $item) (has (trimPrefix "-" $item) $names) -}}
{{- $decision = "off" -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if or (eq $decision "on") (and (not $decision) $star .controller.enabledByDefault) -}}true{{- end -}}
{{- end -}}

{{- /* A duration of whole seconds or minutes ("30s", "2m"; values.schema.json admits no other) in seconds. */ -}}
{{- define "aiokcm.seconds" -}}
{{- $text := toString . -}}
{{- if hasSuffix "m" $text -}}
{{- mul (trimSuffix "m" $text | atoi) 60 -}}
{{- else -}}
{{- trimSuffix "s" $text | atoi -}}
{{- end -}}
{{- end -}}
