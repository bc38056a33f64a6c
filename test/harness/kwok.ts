// What kwok needs to stand in for a node: the fake node itself and the stages that make its pods Running/Ready.

// A kwok-managed node: no taint, so every pod may land on it; kwok keeps it Ready and its pods Running.
export const FAKE_NODE = {
  apiVersion: 'v1',
  kind: 'Node',
  metadata: {
    name: 'kwok-node-0',
    annotations: { 'node.alpha.kubernetes.io/ttl': '0', 'kwok.x-k8s.io/node': 'fake' },
    labels: { 'kubernetes.io/hostname': 'kwok-node-0', 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', type: 'kwok' },
  },
  status: {
    allocatable: { cpu: '32', memory: '256Gi', pods: '110' },
    capacity: { cpu: '32', memory: '256Gi', pods: '110' },
  },
};

// kwok's simulation stages. The kwok binary has none built in (kwokctl injects them), so these are upstream's
// kustomize/stage/{node/fast,node/heartbeat-with-lease,pod/fast} of kwok v0.8.0, condensed.
export const KWOK_STAGES = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: { name: node-initialize }
spec:
  resourceRef: { apiGroup: v1, kind: Node }
  selector:
    matchExpressions:
    - { key: '.status.conditions.[] | select( .type == "Ready" ) | .status', operator: NotIn, values: ['True'] }
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $lastTransitionTime := or .metadata.creationTimestamp $now }}
      conditions:
      {{ range NodeConditions }}
      - lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $lastTransitionTime | Quote }}
        message: {{ .message | Quote }}
        reason: {{ .reason | Quote }}
        status: {{ .status | Quote }}
        type: {{ .type | Quote }}
      {{ end }}
      addresses:
      {{ with NodeIP }}
      - { address: {{ . | Quote }}, type: InternalIP }
      {{ end }}
      {{ with NodeName }}
      - { address: {{ . | Quote }}, type: Hostname }
      {{ end }}
      allocatable:
      {{ with .status.allocatable }}
      {{ YAML . 1 }}
      {{ else }}
        { cpu: 1k, memory: 1Ti, pods: 1M }
      {{ end }}
      capacity:
      {{ with .status.capacity }}
      {{ YAML . 1 }}
      {{ else }}
        { cpu: 1k, memory: 1Ti, pods: 1M }
      {{ end }}
      {{ $v := printf "kwok-%s" Version }}
      nodeInfo: { architecture: amd64, bootID: "", containerRuntimeVersion: {{ $v }}, kernelVersion: {{ $v }}, kubeProxyVersion: {{ $v }}, kubeletVersion: {{ $v }}, machineID: "", operatingSystem: linux, osImage: "", systemUUID: "" }
      phase: Running
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: { name: node-heartbeat-with-lease }
spec:
  resourceRef: { apiGroup: v1, kind: Node }
  selector:
    matchExpressions:
    - { key: .status.phase, operator: In, values: [Running] }
    - { key: '.status.conditions.[] | select( .type == "Ready" ) | .status', operator: In, values: ['True'] }
  delay: { durationMilliseconds: 600000, jitterDurationMilliseconds: 610000 }
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $lastTransitionTime := or .metadata.creationTimestamp $now }}
      conditions:
      {{ range NodeConditions }}
      - lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $lastTransitionTime | Quote }}
        message: {{ .message | Quote }}
        reason: {{ .reason | Quote }}
        status: {{ .status | Quote }}
        type: {{ .type | Quote }}
      {{ end }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: { name: pod-ready }
spec:
  resourceRef: { apiGroup: v1, kind: Pod }
  selector:
    matchExpressions:
    - { key: .metadata.deletionTimestamp, operator: DoesNotExist }
    - { key: .status.phase, operator: In, values: [Pending] }
    - { key: '.status.conditions.[] | select( .type == "Ready" ) | .status', operator: NotIn, values: ['True'] }
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - { lastTransitionTime: {{ $now | Quote }}, status: "True", type: Initialized }
      - { lastTransitionTime: {{ $now | Quote }}, status: "True", type: Ready }
      - { lastTransitionTime: {{ $now | Quote }}, status: "True", type: ContainersReady }
      {{ range .spec.readinessGates }}
      - { lastTransitionTime: {{ $now | Quote }}, status: "True", type: {{ .conditionType | Quote }} }
      {{ end }}
      containerStatuses:
      {{ range .spec.containers }}
      - { image: {{ .image | Quote }}, name: {{ .name | Quote }}, ready: true, restartCount: 0, state: { running: { startedAt: {{ $now | Quote }} } } }
      {{ end }}
      initContainerStatuses:
      {{ range .spec.initContainers }}
      {{ if eq .restartPolicy "Always" }}
      - { image: {{ .image | Quote }}, name: {{ .name | Quote }}, ready: true, restartCount: 0, started: true, state: { running: { startedAt: {{ $now | Quote }} } } }
      {{ else }}
      - { image: {{ .image | Quote }}, name: {{ .name | Quote }}, ready: true, restartCount: 0, state: { terminated: { exitCode: 0, reason: Completed, startedAt: {{ $now | Quote }}, finishedAt: {{ $now | Quote }} } } }
      {{ end }}
      {{ end }}
      {{ with NodeIPsWith .spec.nodeName }}
      hostIP: {{ index . 0 | Quote }}
      hostIPs:
      {{ range . }}
      - ip: {{ . | Quote }}
      {{ end }}
      {{ end }}
      {{ with PodIPsWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) }}
      podIP: {{ index . 0 | Quote }}
      podIPs:
      {{ range . }}
      - ip: {{ . | Quote }}
      {{ end }}
      {{ end }}
      phase: Running
      startTime: {{ $now | Quote }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: { name: pod-complete }
spec:
  resourceRef: { apiGroup: v1, kind: Pod }
  selector:
    matchExpressions:
    - { key: .metadata.deletionTimestamp, operator: DoesNotExist }
    - { key: .status.phase, operator: In, values: [Running] }
    - { key: '.metadata.ownerReferences.[].kind', operator: In, values: [Job] }
  next:
    statusTemplate: |
      {{ $now := Now }}
      containerStatuses:
      {{ range .spec.containers }}
      - { image: {{ .image | Quote }}, name: {{ .name | Quote }}, ready: false, restartCount: 0, started: false, state: { terminated: { exitCode: 0, reason: Completed, startedAt: {{ $now | Quote }}, finishedAt: {{ $now | Quote }} } } }
      {{ end }}
      phase: Succeeded
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata: { name: pod-delete }
spec:
  resourceRef: { apiGroup: v1, kind: Pod }
  selector:
    matchExpressions:
    - { key: .metadata.deletionTimestamp, operator: Exists }
  next:
    delete: true
`;
