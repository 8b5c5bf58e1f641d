"""Field numbers of the Kubernetes protobuf messages kubesim decodes (read off bytes kubectl 1.32 sends)."""

from __future__ import annotations

# One message a line (an indented line continues the one above): its name, then `number name kind` per field.
# kinds: s string, i int, b bool, y bytes (base64 in JSON), ms map<string,string>, my map<string,bytes>,
# mq map<string,Quantity>, ios IntOrString, a trailing "?" keeps zero values (pointer fields),
# [X] a repeated X, anything else a message name.
_MESSAGES = """
Unknown                      1 typeMeta TypeMeta, 2 raw y, 3 contentEncoding s, 4 contentType s
TypeMeta                     1 apiVersion s, 2 kind s
ObjectMeta                   1 name s, 2 generateName s, 3 namespace s, 5 uid s, 6 resourceVersion s,
                             11 labels ms, 12 annotations ms, 13 ownerReferences [OwnerReference],
                             14 finalizers [s]
OwnerReference               1 kind s, 3 name s, 4 uid s, 5 apiVersion s, 6 controller b?,
                             7 blockOwnerDeletion b?
LabelSelector                1 matchLabels ms, 2 matchExpressions [LabelSelectorRequirement]
LabelSelectorRequirement     1 key s, 2 operator s, 3 values [s]
ObjectReference              1 kind s, 2 namespace s, 3 name s, 4 uid s, 5 apiVersion s,
                             6 resourceVersion s, 7 fieldPath s
LocalObjectReference         1 name s
Namespace                    1 metadata ObjectMeta, 2 spec NamespaceSpec
NamespaceSpec                1 finalizers [s]
ConfigMap                    1 metadata ObjectMeta, 2 data ms, 3 binaryData my, 4 immutable b?
Secret                       1 metadata ObjectMeta, 2 data my, 3 type s, 4 stringData ms, 5 immutable b?
ServiceAccount               1 metadata ObjectMeta, 2 secrets [ObjectReference],
                             3 imagePullSecrets [LocalObjectReference], 4 automountServiceAccountToken b?
Deployment                   1 metadata ObjectMeta, 2 spec DeploymentSpec
DeploymentSpec               1 replicas i?, 2 selector LabelSelector, 3 template PodTemplateSpec,
                             4 strategy DeploymentStrategy, 5 minReadySeconds i, 6 revisionHistoryLimit i?,
                             7 paused b, 9 progressDeadlineSeconds i?
DeploymentStrategy           1 type s, 2 rollingUpdate RollingUpdateDeployment
RollingUpdateDeployment      1 maxUnavailable ios, 2 maxSurge ios
PodTemplateSpec              1 metadata ObjectMeta, 2 spec PodSpec
PodSpec                      2 containers [Container], 3 restartPolicy s,
                             4 terminationGracePeriodSeconds i?, 5 activeDeadlineSeconds i?, 6 dnsPolicy s,
                             7 nodeSelector ms, 8 serviceAccountName s, 10 nodeName s, 11 hostNetwork b,
                             16 hostname s, 17 subdomain s, 19 schedulerName s,
                             20 initContainers [Container], 24 priorityClassName s
Container                    1 name s, 2 image s, 3 command [s], 4 args [s], 5 workingDir s,
                             6 ports [ContainerPort], 7 env [EnvVar], 8 resources ResourceRequirements,
                             13 terminationMessagePath s, 14 imagePullPolicy s, 16 stdin b, 17 stdinOnce b,
                             18 tty b, 20 terminationMessagePolicy s
ContainerPort                1 name s, 2 hostPort i, 3 containerPort i, 4 protocol s, 5 hostIP s
EnvVar                       1 name s, 2 value s
ResourceRequirements         1 limits mq, 2 requests mq
Job                          1 metadata ObjectMeta, 2 spec JobSpec
JobSpec                      1 parallelism i?, 2 completions i?, 3 activeDeadlineSeconds i?,
                             4 selector LabelSelector, 5 manualSelector b?, 6 template PodTemplateSpec,
                             7 backoffLimit i?, 8 ttlSecondsAfterFinished i?, 9 completionMode s,
                             10 suspend b?
CronJob                      1 metadata ObjectMeta, 2 spec CronJobSpec
CronJobSpec                  1 schedule s, 2 startingDeadlineSeconds i?, 3 concurrencyPolicy s,
                             4 suspend b?, 5 jobTemplate JobTemplateSpec, 6 successfulJobsHistoryLimit i?,
                             7 failedJobsHistoryLimit i?, 8 timeZone s
JobTemplateSpec              1 metadata ObjectMeta, 2 spec JobSpec
Service                      1 metadata ObjectMeta, 2 spec ServiceSpec
ServiceSpec                  1 ports [ServicePort], 2 selector ms, 3 clusterIP s, 4 type s,
                             10 externalName s, 18 clusterIPs [s]
ServicePort                  1 name s, 2 protocol s, 3 port i, 4 targetPort ios, 5 nodePort i
Role                         1 metadata ObjectMeta, 2 rules [PolicyRule]
ClusterRole                  1 metadata ObjectMeta, 2 rules [PolicyRule]
PolicyRule                   1 verbs [s], 2 apiGroups [s], 3 resources [s], 4 resourceNames [s],
                             5 nonResourceURLs [s]
RoleBinding                  1 metadata ObjectMeta, 2 subjects [Subject], 3 roleRef RoleRef
ClusterRoleBinding           1 metadata ObjectMeta, 2 subjects [Subject], 3 roleRef RoleRef
Subject                      1 kind s, 2 apiGroup s, 3 name s, 4 namespace s
RoleRef                      1 apiGroup s, 2 kind s, 3 name s
SelfSubjectAccessReview      1 metadata ObjectMeta, 2 spec SelfSubjectAccessReviewSpec
SelfSubjectAccessReviewSpec  1 resourceAttributes ResourceAttributes,
                             2 nonResourceAttributes NonResourceAttributes
ResourceAttributes           1 namespace s, 2 verb s, 3 group s, 4 version s, 5 resource s, 6 subresource s,
                             7 name s
NonResourceAttributes        1 path s, 2 verb s
SelfSubjectRulesReview       1 metadata ObjectMeta, 2 spec SelfSubjectRulesReviewSpec
SelfSubjectRulesReviewSpec   1 namespace s
SelfSubjectReview            1 metadata ObjectMeta
TokenRequest                 1 metadata ObjectMeta, 2 spec TokenRequestSpec
TokenRequestSpec             1 audiences [s], 3 boundObjectRef BoundObjectReference, 4 expirationSeconds i?
BoundObjectReference         1 kind s, 2 apiVersion s, 3 name s, 4 uid s
"""

Field = tuple[str, str]


def _parse(table: str) -> dict[str, dict[int, Field]]:
    messages: dict[str, dict[int, Field]] = {}
    for entry in table.strip().replace("\n ", " ").splitlines():
        name, fields = entry.split(maxsplit=1)
        messages[name] = {}
        for field in fields.split(","):
            number, field_name, kind = field.split()
            messages[name][int(number)] = (field_name, kind)
    return messages


M: dict[str, dict[int, Field]] = _parse(_MESSAGES)
