{{/* Name of the chart, and the full name of this release's objects (63 characters at most). */}}
{{- define "boxyard.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "boxyard.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "boxyard.selectorLabels" -}}
app.kubernetes.io/name: {{ include "boxyard.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{- define "boxyard.labels" -}}
{{ include "boxyard.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: boxyard
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "boxyard.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "boxyard.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "boxyard.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The ClusterRole the operator binds each TerminalPool's gateway to, in the pool's namespace only. */}}
{{- define "boxyard.gatewayClusterRole" -}}
{{- printf "%s-terminal-gateway" (include "boxyard.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Images resources may name: allowedImages, or the chart's own repository. */}}
{{- define "boxyard.allowedImages" -}}
{{- if .Values.allowedImages -}}
{{- join "," .Values.allowedImages -}}
{{- else -}}
{{- .Values.image.repository -}}
{{- end -}}
{{- end -}}

{{/*
What the operator may do where it reconciles. Least privilege: it writes only the kinds it generates, reads
Secrets (metadata cached, values read only for the pre-rollout checks), and holds no pod rights: the terminal
gateway gets those from the ClusterRole <release>-terminal-gateway, which the operator may bind (RBAC's `bind`
verb, limited to that one name) without holding what it grants.
*/}}
{{- define "boxyard.operatorRules" -}}
- apiGroups: [boxyard.io]
  resources: [boxrepositories, fileshares, terminalpools]
  verbs: [get, list, watch, patch, update]
- apiGroups: [boxyard.io]
  resources: [boxrepositories/status, fileshares/status, terminalpools/status]
  verbs: [get, patch, update]
- apiGroups: [boxyard.io]
  resources: [boxrepositories/finalizers, fileshares/finalizers, terminalpools/finalizers]
  verbs: [update]
- apiGroups: [apps]
  resources: [deployments]
  verbs: [get, list, watch, create, patch, delete]
- apiGroups: [""]
  resources: [services, configmaps, serviceaccounts]
  verbs: [get, list, watch, create, patch, delete]
- apiGroups: [""]
  resources: [secrets]
  verbs: [get, list, watch, create, patch]
- apiGroups: [""]
  resources: [events]
  verbs: [create, patch]
- apiGroups: [networking.k8s.io]
  resources: [ingresses, networkpolicies]
  verbs: [get, list, watch, create, patch, delete]
- apiGroups: [policy]
  resources: [poddisruptionbudgets]
  verbs: [get, list, watch, create, patch, delete]
- apiGroups: [rbac.authorization.k8s.io]
  resources: [rolebindings]
  verbs: [get, list, watch, create, patch, delete]
- apiGroups: [rbac.authorization.k8s.io]
  resources: [clusterroles]
  resourceNames: [{{ include "boxyard.gatewayClusterRole" . }}]
  verbs: [bind]
- apiGroups: [monitoring.coreos.com]
  resources: [servicemonitors]
  verbs: [get, create, patch, delete]
# Backups: ScheduledBackups create and prune Backups; each Backup runs a Job whose pod's termination message
# carries the result.
- apiGroups: [boxyard.io]
  resources: [backups, scheduledbackups]
  verbs: [get, list, watch, create, delete]
- apiGroups: [boxyard.io]
  resources: [backups/status, scheduledbackups/status]
  verbs: [get, patch, update]
- apiGroups: [batch]
  resources: [jobs]
  verbs: [get, list, watch, create, patch, delete]
- apiGroups: [""]
  resources: [pods]
  verbs: [list]
{{- end -}}
