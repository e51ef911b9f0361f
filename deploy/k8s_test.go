package deploy_test

import (
	"bytes"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/sitetools/sitetools/internal/config"
	"github.com/sitetools/sitetools/tools/appointments"
)

// kinds maps apiVersion/kind to the typed object a manifest must decode into.
var kinds = map[string]func() any{
	"v1/Namespace":                                  func() any { return new(corev1.Namespace) },
	"v1/ServiceAccount":                             func() any { return new(corev1.ServiceAccount) },
	"v1/ConfigMap":                                  func() any { return new(corev1.ConfigMap) },
	"v1/Secret":                                     func() any { return new(corev1.Secret) },
	"v1/Service":                                    func() any { return new(corev1.Service) },
	"apps/v1/Deployment":                            func() any { return new(appsv1.Deployment) },
	"batch/v1/Job":                                  func() any { return new(batchv1.Job) },
	"batch/v1/CronJob":                              func() any { return new(batchv1.CronJob) },
	"autoscaling/v2/HorizontalPodAutoscaler":        func() any { return new(autoscalingv2.HorizontalPodAutoscaler) },
	"policy/v1/PodDisruptionBudget":                 func() any { return new(policyv1.PodDisruptionBudget) },
	"networking.k8s.io/v1/NetworkPolicy":            func() any { return new(networkingv1.NetworkPolicy) },
	"networking.k8s.io/v1/Ingress":                  func() any { return new(networkingv1.Ingress) },
	"kustomize.config.k8s.io/v1beta1/Kustomization": func() any { return new(kustomization) },
}

// kustomization is the part of kustomize's Kustomization that deploy/k8s uses; strict
// decoding refuses anything else.
type kustomization struct {
	metav1.TypeMeta `json:",inline"`
	Namespace       string   `json:"namespace"`
	Resources       []string `json:"resources"`
}

// decodeStrict decodes one YAML document into its typed object as strictly as the API
// server's strict field validation does: unknown fields, fields in the wrong case and
// duplicate fields are errors (encoding/json alone would match case-insensitively).
func decodeStrict(doc []byte) (any, error) {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, err
	}
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, err
	}
	newObj, ok := kinds[tm.APIVersion+"/"+tm.Kind]
	if !ok {
		return nil, fmt.Errorf("unknown apiVersion/kind %s/%s", tm.APIVersion, tm.Kind)
	}
	obj := newObj()
	strict, err := sigsjson.UnmarshalStrict(j, obj, sigsjson.DisallowDuplicateFields, sigsjson.DisallowUnknownFields)
	if err != nil {
		return nil, err
	}
	if len(strict) > 0 {
		return nil, fmt.Errorf("%s: %v", tm.Kind, strict)
	}
	return obj, nil
}

// splitDocuments splits a YAML stream at its "---" lines.
func splitDocuments(b []byte) [][]byte {
	var docs [][]byte
	for _, d := range bytes.Split(append([]byte("\n"), b...), []byte("\n---")) {
		if len(bytes.TrimSpace(stripComments(d))) > 0 {
			docs = append(docs, d)
		}
	}
	return docs
}

func stripComments(b []byte) []byte {
	var out [][]byte
	for _, line := range bytes.Split(b, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

// manifests is every object in deploy/k8s, by file name.
type manifests map[string][]any

func loadManifests(t *testing.T) manifests {
	t.Helper()
	dir := filepath.Join(root(t), "deploy", "k8s")
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s: %v", dir, err)
	}
	m := manifests{}
	for _, f := range files {
		for i, doc := range splitDocuments(readFile(t, f)) {
			obj, err := decodeStrict(doc)
			if err != nil {
				t.Errorf("%s, document %d: %v", filepath.Base(f), i+1, err)
				continue
			}
			m[filepath.Base(f)] = append(m[filepath.Base(f)], obj)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	return m
}

// one returns the only object of type T in the manifests.
func one[T any](t *testing.T, m manifests) *T {
	t.Helper()
	var found []*T
	for _, objs := range m {
		for _, o := range objs {
			if v, ok := o.(*T); ok {
				found = append(found, v)
			}
		}
	}
	if len(found) != 1 {
		var zero T
		t.Fatalf("%d objects of type %T, want 1", len(found), zero)
	}
	return found[0]
}

// TestK8sDecodingIsStrict: what the decoder refuses, so that a clean decode of the
// manifests means something.
func TestK8sDecodingIsStrict(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown field": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {replica: 2}\n",
		"wrong case":    "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {Replicas: 2}\n",
		"duplicate":     "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {type: ClusterIP, type: NodePort}\n",
		"wrong type":    "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: x}\nspec: {minAvailable: [1]}\n",
		"wrong version": "apiVersion: autoscaling/v1\nkind: HorizontalPodAutoscaler\nmetadata: {name: x}\n",
		"nested":        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\nspec: {template: {spec: {containers: [{name: a, imagePullSecret: b}]}}}\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := decodeStrict([]byte(doc)); err == nil {
				t.Fatalf("decoded without error:\n%s", doc)
			}
		})
	}
}

func TestK8sManifests(t *testing.T) {
	m := loadManifests(t)
	deploy := one[appsv1.Deployment](t, m)
	job := one[batchv1.Job](t, m)
	svc := one[corev1.Service](t, m)
	hpa := one[autoscalingv2.HorizontalPodAutoscaler](t, m)
	pdb := one[policyv1.PodDisruptionBudget](t, m)
	np := one[networkingv1.NetworkPolicy](t, m)
	ing := one[networkingv1.Ingress](t, m)
	sa := one[corev1.ServiceAccount](t, m)
	secret := one[corev1.Secret](t, m)
	configMaps := map[string]*corev1.ConfigMap{}
	for _, objs := range m {
		for _, o := range objs {
			if cm, ok := o.(*corev1.ConfigMap); ok {
				configMaps[cm.Name] = cm
			}
		}
	}
	pod := deploy.Spec.Template
	set := &k8sSet{m: m, deploy: deploy, job: job, svc: svc, hpa: hpa, pdb: pdb, np: np, ing: ing, sa: sa, secret: secret,
		configMaps: configMaps, pod: pod, podLabels: labels.Set(pod.Labels), c: pod.Spec.Containers[0]}

	t.Run("kustomization", func(t *testing.T) { k8sKustomization(t, set) })

	t.Run("pod security", func(t *testing.T) { k8sPodSecurity(t, set) })

	t.Run("deployment", func(t *testing.T) { k8sDeployment(t, set) })

	t.Run("configuration", func(t *testing.T) { k8sConfiguration(t, set) })

	t.Run("service", func(t *testing.T) { k8sService(t, set) })

	t.Run("scaling", func(t *testing.T) { k8sScaling(t, set) })

	t.Run("network policy", func(t *testing.T) { k8sNetworkPolicy(t, set) })

	t.Run("sync cronjob", func(t *testing.T) { k8sSyncCronJob(t, set) })
}

// k8sSyncCronJob is the subtest "sync cronjob" of TestK8sManifests: the hourly
// `sitetools ingest --sitemap` for sites without a publish hook runs the Deployment's
// image with its configuration, restricted, one run at a time, each ending before the
// next is due.
func k8sSyncCronJob(t *testing.T, set *k8sSet) {
	cron := one[batchv1.CronJob](t, set.m)
	spec := cron.Spec.JobTemplate.Spec
	pod := spec.Template.Spec
	checkRestricted(t, "sync cronjob", pod)
	if len(pod.Containers) != 1 {
		t.Fatalf("the sync CronJob has %d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if c.Image != set.c.Image {
		t.Errorf("the sync CronJob runs %q, the Deployment %q: want the same image", c.Image, set.c.Image)
	}
	if len(c.Args) != 3 || c.Args[0] != "ingest" || c.Args[1] != "--sitemap" {
		t.Fatalf("the sync CronJob's args %v, want ingest --sitemap URL", c.Args)
	}
	// The sitemap's URL is a variable the container defines ($(NAME) is expanded from
	// its env only), with a URL in it.
	if name, ok := strings.CutPrefix(c.Args[2], "$("); ok {
		name = strings.TrimSuffix(name, ")")
		i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
		if i < 0 || !strings.HasPrefix(c.Env[i].Value, "https://") {
			t.Errorf("the sync CronJob's --sitemap %s is not a URL its env sets", c.Args[2])
		}
	}
	// The Deployment's ConfigMaps, and of its Secret only what ingest reads: the Secret
	// also holds the admin tokens, which a job that never calls the admin API must not
	// carry (TestAdminTokensInRecipes).
	configMapsOnly := func(from []corev1.EnvFromSource) []corev1.EnvFromSource {
		return slices.DeleteFunc(slices.Clone(from), func(f corev1.EnvFromSource) bool { return f.ConfigMapRef == nil })
	}
	if !reflect.DeepEqual(c.EnvFrom, configMapsOnly(set.c.EnvFrom)) {
		t.Errorf("the sync CronJob's envFrom %+v, want the Deployment's ConfigMaps %+v and no Secret as a whole", c.EnvFrom, configMapsOnly(set.c.EnvFrom))
	}
	cfg := podConfig(t, c, set.configMaps, set.secret, ingestAreas...)
	if cfg.DatabaseURL != set.secret.StringData["DATABASE_URL"] || cfg.Embeddings.APIKey != set.secret.StringData["EMBEDDINGS_API_KEY"] {
		t.Error("the sync CronJob does not take DATABASE_URL and EMBEDDINGS_API_KEY from the Secret")
	}
	if cron.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent {
		t.Errorf("concurrencyPolicy %q: two syncs could run at once", cron.Spec.ConcurrencyPolicy)
	}
	if d := spec.ActiveDeadlineSeconds; d == nil || *d <= 0 || *d >= 3600 {
		t.Errorf("activeDeadlineSeconds %v, want a deadline within the hour between runs", d)
	}
	if spec.BackoffLimit == nil || *spec.BackoffLimit > 3 {
		t.Errorf("backoffLimit %v, want a few retries at most", spec.BackoffLimit)
	}
	if fields := strings.Fields(cron.Spec.Schedule); len(fields) != 5 || fields[1] != "*" {
		t.Errorf("schedule %q, want hourly", cron.Spec.Schedule)
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := c.Resources.Requests[r]; !ok {
			t.Errorf("the sync CronJob has no %s request", r)
		}
		if _, ok := c.Resources.Limits[r]; !ok {
			t.Errorf("the sync CronJob has no %s limit", r)
		}
	}
}

// k8sKustomization is the subtest "kustomization" of TestK8sManifests.
func k8sKustomization(t *testing.T, set *k8sSet) {
	m := set.m
	k := one[kustomization](t, m)
	var want []string
	for name := range m {
		switch name {
		case "kustomization.yaml", "secret.example.yaml", "migrate-job.yaml", "sync-cronjob.yaml":
		default:
			want = append(want, name)
		}
	}
	if got := slices.Sorted(slices.Values(k.Resources)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("kustomization resources %v, want every manifest but the Secret example, the Job and the sync CronJob: %v", got, want)
	}
}

// k8sPodSecurity is the subtest "pod security" of TestK8sManifests.
func k8sPodSecurity(t *testing.T, set *k8sSet) {
	job, sa, pod := set.job, set.sa, set.pod
	for name, spec := range map[string]corev1.PodSpec{"deployment": pod.Spec, "migration job": job.Spec.Template.Spec} {
		checkRestricted(t, name, spec)
	}
	if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		t.Error("the service account mounts a token")
	}
}

// k8sDeployment is the subtest "deployment" of TestK8sManifests.
func k8sDeployment(t *testing.T, set *k8sSet) {
	deploy, job, secret, configMaps, pod, podLabels, c := set.deploy, set.job, set.secret, set.configMaps, set.pod, set.podLabels, set.c
	if !podLabelsSelected(deploy.Spec.Selector, podLabels) {
		t.Error("the Deployment's selector does not select its pods")
	}
	for name, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		want := map[string]string{"readiness": "/readyz", "liveness": "/healthz"}[name]
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != want || p.HTTPGet.Port.String() != "http" {
			t.Errorf("%s probe %+v, want GET %s on the http port", name, p, want)
		}
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := c.Resources.Requests[r]; !ok {
			t.Errorf("no %s request", r)
		}
		if _, ok := c.Resources.Limits[r]; !ok {
			t.Errorf("no %s limit", r)
		}
	}
	if !slices.Equal(c.Args, []string{"serve"}) {
		t.Errorf("args %v, want serve", c.Args)
	}
	if s := deploy.Spec.Strategy.RollingUpdate; s == nil || s.MaxUnavailable.IntValue() != 0 {
		t.Error("a rollout may take serving replicas away first: want maxUnavailable 0")
	}
	grace := int64(30)
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	preStop := int64(0)
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil {
		preStop = c.Lifecycle.PreStop.Sleep.Seconds
	}
	cfg := podConfig(t, c, configMaps, secret)
	if shutdown := int64(cfg.ShutdownTimeout.Seconds()); preStop+shutdown >= grace {
		t.Errorf("preStop %ds + SHUTDOWN_TIMEOUT %ds does not fit in terminationGracePeriodSeconds %d", preStop, shutdown, grace)
	}
	if job.Spec.Template.Spec.Containers[0].Image != c.Image {
		t.Errorf("the migration Job runs %q, the Deployment %q: want the same image", job.Spec.Template.Spec.Containers[0].Image, c.Image)
	}
	if !slices.Equal(job.Spec.Template.Spec.Containers[0].Args, []string{"migrate"}) {
		t.Errorf("the migration Job's args %v, want migrate", job.Spec.Template.Spec.Containers[0].Args)
	}
	if job.Spec.Parallelism == nil || *job.Spec.Parallelism != 1 {
		t.Error("the migration Job may run more than one migration at once")
	}
}

// k8sConfiguration is the subtest "configuration" of TestK8sManifests.
func k8sConfiguration(t *testing.T, set *k8sSet) {
	secret, configMaps, pod, c := set.secret, set.configMaps, set.pod, set.c
	known := knownVariables(t)
	for _, cm := range configMaps {
		if cm.Name != "sitetools" {
			continue
		}
		for k := range cm.Data {
			if !known[k] {
				t.Errorf("ConfigMap sets %s, which is not a configuration variable", k)
			}
		}
	}
	for k := range secret.StringData {
		if !known[k] {
			t.Errorf("the Secret sets %s, which is not a configuration variable", k)
		}
	}
	for _, e := range c.Env {
		if !known[e.Name] {
			t.Errorf("the Deployment sets %s, which is not a configuration variable", e.Name)
		}
	}
	// The configuration loads as the service loads it at start-up.
	cfg := podConfig(t, c, configMaps, secret)
	if cfg.ListenAddr != ":"+strconv.Itoa(int(containerPort(t, c, "http"))) ||
		cfg.AdminListenAddr != ":"+strconv.Itoa(int(containerPort(t, c, "admin"))) {
		t.Errorf("LISTEN_ADDR %q, ADMIN_LISTEN_ADDR %q do not match the container ports", cfg.ListenAddr, cfg.AdminListenAddr)
	}
	if len(cfg.TrustedProxies) == 0 {
		t.Error("TRUSTED_PROXIES is empty: behind the ingress every visitor would share its address")
	}
	// The schedule mounted at AVAILABILITY_CONFIG is the example, and it loads.
	avail, ok := configMaps["sitetools-availability"]
	if !ok {
		t.Fatal("no ConfigMap sitetools-availability")
	}
	var mount *corev1.VolumeMount
	for i, vm := range c.VolumeMounts {
		for _, v := range pod.Spec.Volumes {
			if v.Name == vm.Name && v.ConfigMap != nil && v.ConfigMap.Name == avail.Name {
				mount = &c.VolumeMounts[i]
			}
		}
	}
	if mount == nil || filepath.Dir(cfg.AvailabilityConfig) != mount.MountPath {
		t.Fatalf("AVAILABILITY_CONFIG %q is not in the mounted ConfigMap %s", cfg.AvailabilityConfig, avail.Name)
	}
	schedule, ok := avail.Data[filepath.Base(cfg.AvailabilityConfig)]
	if !ok {
		t.Fatalf("ConfigMap %s has no %s", avail.Name, filepath.Base(cfg.AvailabilityConfig))
	}
	if example := string(readFile(t, filepath.Join(root(t), "deploy", "availability.example.yaml"))); schedule != example {
		t.Error("the availability ConfigMap differs from deploy/availability.example.yaml")
	}
	if _, err := appointments.LoadSchedule(strings.NewReader(schedule)); err != nil {
		t.Errorf("the schedule does not load: %v", err)
	}
}

// k8sService is the subtest "service" of TestK8sManifests.
func k8sService(t *testing.T, set *k8sSet) {
	svc, ing, podLabels, c := set.svc, set.ing, set.podLabels, set.c
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(podLabels) {
		t.Error("the Service does not select the pods")
	}
	for _, p := range svc.Spec.Ports {
		containerPort(t, c, p.TargetPort.String())
	}
	for _, path := range ing.Spec.Rules[0].HTTP.Paths {
		b := path.Backend.Service
		if b == nil || b.Name != svc.Name || !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == b.Port.Name }) {
			t.Errorf("Ingress path %s goes to %+v, not a port of the Service", path.Path, b)
		}
	}
}

// k8sScaling is the subtest "scaling" of TestK8sManifests.
func k8sScaling(t *testing.T, set *k8sSet) {
	deploy, hpa, pdb, podLabels := set.deploy, set.hpa, set.pdb, set.podLabels
	ref := hpa.Spec.ScaleTargetRef
	if ref.Kind != "Deployment" || ref.Name != deploy.Name || ref.APIVersion != "apps/v1" {
		t.Errorf("the HPA scales %+v, not the Deployment", ref)
	}
	if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas < 2 {
		t.Error("the HPA may scale to one replica: a disruption would stop the service")
	}
	if !podLabelsSelected(pdb.Spec.Selector, podLabels) {
		t.Error("the PodDisruptionBudget does not select the pods")
	}
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() >= int(*hpa.Spec.MinReplicas) {
		t.Error("the PodDisruptionBudget must keep fewer replicas than the HPA's minimum, or no node can ever be drained")
	}
}

// k8sNetworkPolicy is the subtest "network policy" of TestK8sManifests.
func k8sNetworkPolicy(t *testing.T, set *k8sSet) {
	np, podLabels, c := set.np, set.podLabels, set.c
	if !podLabelsSelected(&np.Spec.PodSelector, podLabels) {
		t.Error("the NetworkPolicy does not select the pods")
	}
	if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) {
		t.Errorf("policy types %v, want Ingress and Egress", np.Spec.PolicyTypes)
	}
	for _, rule := range np.Spec.Ingress {
		for _, p := range rule.Ports {
			containerPort(t, c, p.Port.String())
		}
	}
}

// k8sSet is the manifests' objects the checks of TestK8sManifests read.
type k8sSet struct {
	m          manifests
	deploy     *appsv1.Deployment
	job        *batchv1.Job
	svc        *corev1.Service
	hpa        *autoscalingv2.HorizontalPodAutoscaler
	pdb        *policyv1.PodDisruptionBudget
	np         *networkingv1.NetworkPolicy
	ing        *networkingv1.Ingress
	sa         *corev1.ServiceAccount
	secret     *corev1.Secret
	configMaps map[string]*corev1.ConfigMap
	pod        corev1.PodTemplateSpec
	podLabels  labels.Set
	c          corev1.Container
}

// checkRestricted asserts what the restricted Pod Security Standard and the issue ask of
// a pod: non-root, no privilege escalation, no capabilities, RuntimeDefault seccomp, a
// read-only root filesystem and no service account token.
func checkRestricted(t *testing.T, name string, spec corev1.PodSpec) {
	t.Helper()
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("%s: automountServiceAccountToken is not false", name)
	}
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: pod securityContext %+v, want runAsNonRoot and RuntimeDefault seccomp", name, psc)
	}
	if psc != nil && (psc.RunAsUser == nil || strconv.FormatInt(*psc.RunAsUser, 10)+":"+strconv.FormatInt(*psc.RunAsGroup, 10) != dockerfileUser(t)) {
		t.Errorf("%s: runAsUser/runAsGroup differ from the Dockerfile's USER %s", name, dockerfileUser(t))
	}
	for _, c := range append(spec.InitContainers, spec.Containers...) {
		sc := c.SecurityContext
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot ||
			sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 ||
			sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("%s, container %s: securityContext %+v is not restricted", name, c.Name, sc)
		}
		if c.Resources.Limits.Memory().IsZero() {
			t.Errorf("%s, container %s: no memory limit", name, c.Name)
		}
	}
}

func podLabelsSelected(sel *metav1.LabelSelector, pod labels.Set) bool {
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && !s.Empty() && s.Matches(pod)
}

func containerPort(t *testing.T, c corev1.Container, name string) int32 {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	t.Errorf("container %s has no port named %q", c.Name, name)
	return 0
}

// ingestAreas are the areas of the configuration `sitetools ingest` loads
// (internal/cli: the database, the embeddings, the fetch client and the log).
var ingestAreas = []config.Area{config.AreaDatabase, config.AreaEmbeddings, config.AreaFetch, config.AreaLog}

// podConfig is the configuration the service loads in the pod (the areas given, or
// all as serve loads them): the ConfigMaps and the Secret its envFrom names, then its
// env, with the Secret's keys it refers to.
func podConfig(t *testing.T, c corev1.Container, configMaps map[string]*corev1.ConfigMap, secret *corev1.Secret, areas ...config.Area) config.Config {
	t.Helper()
	env := podEnv(t, c, configMaps, secret)
	cfg, err := config.Load(func(k string) string { return env[k] }, areas...)
	if err != nil {
		t.Fatalf("the pod's configuration does not load:\n%v", err)
	}
	return cfg
}

// podEnv is the container's environment: the ConfigMaps and the Secret its envFrom
// names, then its env, values from the Secret's keys resolved.
func podEnv(t *testing.T, c corev1.Container, configMaps map[string]*corev1.ConfigMap, secret *corev1.Secret) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			cm, ok := configMaps[from.ConfigMapRef.Name]
			if !ok {
				t.Fatalf("envFrom names ConfigMap %s, which is not in deploy/k8s", from.ConfigMapRef.Name)
			}
			maps.Copy(env, cm.Data)
		case from.SecretRef != nil:
			if from.SecretRef.Name != secret.Name {
				t.Fatalf("envFrom names Secret %s; the example is %s", from.SecretRef.Name, secret.Name)
			}
			maps.Copy(env, secret.StringData)
		}
	}
	for _, e := range c.Env {
		env[e.Name] = e.Value
		if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		v, ok := secret.StringData[ref.Key]
		if ref.Name != secret.Name || !ok {
			t.Fatalf("%s refers to key %s of Secret %s; the example %s has no such key", e.Name, ref.Key, ref.Name, secret.Name)
		}
		env[e.Name] = v
	}
	return env
}
