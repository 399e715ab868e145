{{/* The manager's image. */}}
{{- define "kruise.image" -}}
{{- printf "%s:%s" .Values.manager.image.repository (.Values.manager.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/* `--cert-mode`: manager.certMode, else external with certManager.enabled or EnableExternalCerts=true, else managed. */}}
{{- define "kruise.certMode" -}}
{{- if .Values.manager.certMode -}}
{{- .Values.manager.certMode -}}
{{- else if or .Values.certManager.enabled (contains "EnableExternalCerts=true" .Values.featureGates) -}}
external
{{- else -}}
managed
{{- end -}}
{{- end -}}

{{/* The log filter for OpenKruise's klog verbosity manager.log.level ("" or info: no flag). */}}
{{- define "kruise.logFilter" -}}
{{- include "kruise.logFilterOf" .Values.manager.log.level -}}
{{- end -}}

{{/* The log filter for a klog verbosity (the argument): up to 4 `info`, 5 `info,kruise=debug`,
6 and above `debug,kruise=trace`, anything else the filter itself. */}}
{{- define "kruise.logFilterOf" -}}
{{- $level := toString (. | default "") -}}
{{- if regexMatch "^[0-9]+$" $level -}}
{{- $v := atoi $level -}}
{{- if le $v 4 }}info{{ else if eq $v 5 }}info,kruise=debug{{ else }}debug,kruise=trace{{ end -}}
{{- else -}}
{{- $level | default "info" -}}
{{- end -}}
{{- end -}}

{{/* Annotations of the webhook configurations and CRDs: externalCerts.annotations, and cert-manager's
CA injection from the chart's Certificate with certManager.enabled. Empty when there are none. */}}
{{- define "kruise.caAnnotations" -}}
{{- $annotations := deepCopy (.Values.externalCerts.annotations | default dict) -}}
{{- if .Values.certManager.enabled -}}
{{- $_ := set $annotations "cert-manager.io/inject-ca-from" (printf "%s/kruise-webhook-certs" .Values.installation.namespace) -}}
{{- end -}}
{{- with $annotations }}{{ toYaml . }}{{ end -}}
{{- end -}}
