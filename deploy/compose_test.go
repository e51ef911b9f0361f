package deploy_test

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/dotenv"
	"github.com/compose-spec/compose-go/v2/types"
	"github.com/sitetools/sitetools/internal/config"
)

// loadCompose loads deploy/compose.yaml as `docker compose -f deploy/compose.yaml` would,
// with env as the environment (and no .env file), validating it against the compose
// schema that compose-go embeds and checking its references.
func loadCompose(t *testing.T, env map[string]string) (*types.Project, error) {
	t.Helper()
	return loadComposeFile(t, filepath.Join(root(t), "deploy", "compose.yaml"), env)
}

func loadComposeFile(t *testing.T, path string, env map[string]string) (*types.Project, error) {
	t.Helper()
	dir := filepath.Dir(path)
	var list []string
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	opts, err := cli.NewProjectOptions([]string{path},
		cli.WithWorkingDirectory(dir), cli.WithEnv(list), cli.WithConsistency(true))
	if err != nil {
		t.Fatal(err)
	}
	return opts.LoadProject(context.Background())
}

// exampleEnv is deploy/.env.example with its secrets filled in.
func exampleEnv(t *testing.T) map[string]string {
	t.Helper()
	env, err := dotenv.GetEnvFromFile(nil, []string{filepath.Join(root(t), "deploy", ".env.example")})
	if err != nil {
		t.Fatal(err)
	}
	env["POSTGRES_PASSWORD"] = "a-test-password"
	env["ADMIN_TOKEN"] = "a-test-admin-token-0123456789"
	return env
}

// TestComposeSchemaIsChecked: the loader rejects what the compose schema does not allow,
// so a clean load of compose.yaml means something.
func TestComposeSchemaIsChecked(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown field":     "services:\n  a:\n    image: x\n    restart_policy: always\n",
		"wrong type":        "services:\n  a:\n    image: x\n    read_only: maybe\n",
		"unknown condition": "services:\n  a:\n    image: x\n    depends_on:\n      b:\n        condition: service_ready\n  b:\n    image: y\n",
		"missing network":   "services:\n  a:\n    image: x\n    networks: [nowhere]\n",
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "compose.yaml")
			if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := loadComposeFile(t, path, nil); err == nil {
				t.Fatalf("loaded without error:\n%s", doc)
			}
		})
	}
}

func TestComposeRequiresSecrets(t *testing.T) {
	for _, secret := range []string{"POSTGRES_PASSWORD", "ADMIN_TOKEN"} {
		t.Run(secret, func(t *testing.T) {
			env := exampleEnv(t)
			delete(env, secret)
			_, err := loadCompose(t, env)
			if err == nil || !strings.Contains(err.Error(), secret) {
				t.Fatalf("loading without %s: error %v, want one naming it", secret, err)
			}
		})
	}
}

func TestCompose(t *testing.T) {
	p, err := loadCompose(t, exampleEnv(t))
	if err != nil {
		t.Fatalf("deploy/compose.yaml does not load: %v", err)
	}
	want := []string{"ingest", "migrate", "ollama", "ollama-pull", "postgres", "proxy", "sitetools"}
	if got := slices.Sorted(maps.Keys(p.Services)); !slices.Equal(got, want) {
		t.Fatalf("services %v, want %v", got, want)
	}

	t.Run("start order", func(t *testing.T) { composeStartOrder(t, p) })

	t.Run("sitetools containers", func(t *testing.T) { composeSitetoolsContainers(t, p) })

	t.Run("sitetools environment", func(t *testing.T) { composeSitetoolsEnvironment(t, p) })

	t.Run("networks", func(t *testing.T) { composeNetworks(t, p) })

	t.Run("proxy", func(t *testing.T) { composeProxy(t, p) })

	t.Run("postgres", func(t *testing.T) { composePostgres(t, p) })
}

// composeStartOrder is the subtest "start order" of TestCompose.
func composeStartOrder(t *testing.T, p *types.Project) {
	svc := func(name string) types.ServiceConfig { return p.Services[name] }
	for _, d := range []struct{ service, on, condition string }{
		{"migrate", "postgres", types.ServiceConditionHealthy},
		{"ollama-pull", "ollama", types.ServiceConditionHealthy},
		{"ingest", "migrate", types.ServiceConditionCompletedSuccessfully},
		{"ingest", "ollama-pull", types.ServiceConditionCompletedSuccessfully},
		{"sitetools", "ingest", types.ServiceConditionCompletedSuccessfully},
		{"proxy", "sitetools", types.ServiceConditionStarted},
	} {
		dep, ok := svc(d.service).DependsOn[d.on]
		if !ok || dep.Condition != d.condition {
			t.Errorf("%s depends on %s with %+v, want condition %s", d.service, d.on, dep, d.condition)
		}
	}
	for _, name := range []string{"postgres", "ollama", "proxy"} {
		if hc := svc(name).HealthCheck; hc == nil || hc.Disable || len(hc.Test) == 0 {
			t.Errorf("%s has no health check", name)
		}
	}
	for _, name := range []string{"migrate", "ingest", "ollama-pull"} {
		if r := svc(name).Restart; r != "no" {
			t.Errorf("one-shot %s restarts %q, want no", name, r)
		}
	}
}

// composeSitetoolsContainers is the subtest "sitetools containers" of TestCompose.
func composeSitetoolsContainers(t *testing.T, p *types.Project) {
	svc := func(name string) types.ServiceConfig { return p.Services[name] }
	image := svc("sitetools").Image
	for _, name := range []string{"migrate", "ingest", "sitetools"} {
		s := svc(name)
		if s.Image != image || s.Build == nil || s.Build.Dockerfile != "Dockerfile" {
			t.Errorf("%s: image %q build %+v, want %q built from the Dockerfile", name, s.Image, s.Build, image)
		}
		if !s.ReadOnly || !slices.Equal(s.CapDrop, []string{"ALL"}) || !slices.Contains(s.SecurityOpt, "no-new-privileges:true") {
			t.Errorf("%s: read_only %v cap_drop %v security_opt %v", name, s.ReadOnly, s.CapDrop, s.SecurityOpt)
		}
		if want := dockerfileUser(t); s.User != want {
			t.Errorf("%s runs as %q, want the Dockerfile's %q", name, s.User, want)
		}
		if s.Command[0] != map[string]string{"migrate": "migrate", "ingest": "ingest", "sitetools": "serve"}[name] {
			t.Errorf("%s: command %v", name, s.Command)
		}
		if _, ok := s.Networks["backend"]; !ok {
			t.Errorf("%s is not on the backend network", name)
		}
	}
	if got := svc("ingest").Command; !slices.Equal(got, []string{"ingest", "--dir", "/site", "--base-url", "http://localhost:8080"}) {
		t.Errorf("ingest command %v", got)
	}
	if v := svc("ingest").Volumes; len(v) != 1 || v[0].Target != "/site" || !v[0].ReadOnly ||
		v[0].Source != filepath.Join(root(t), "deploy", "demo", "site") {
		t.Errorf("ingest volumes %+v, want the demo site read-only at /site", v)
	}
}

// composeSitetoolsEnvironment is the subtest "sitetools environment" of TestCompose.
func composeSitetoolsEnvironment(t *testing.T, p *types.Project) {
	svc := func(name string) types.ServiceConfig { return p.Services[name] }
	known := knownVariables(t)
	for _, name := range []string{"migrate", "ingest", "sitetools"} {
		for k := range svc(name).Environment {
			if !known[k] {
				t.Errorf("%s sets %s, which is not a configuration variable", name, k)
			}
		}
	}
	// Each container's configuration loads as the service loads it at start-up
	// (migrate and ingest run without the admin listener).
	for _, name := range []string{"migrate", "ingest", "sitetools"} {
		e := svc(name).Environment
		if _, err := config.Load(func(k string) string {
			if k == "ADMIN_LISTEN_ADDR" && name != "sitetools" {
				return "off"
			}
			return deref(e[k])
		}); err != nil {
			t.Errorf("%s: the configuration does not load:\n%v", name, err)
		}
	}
	env := svc("sitetools").Environment
	want := map[string]string{
		"EMBEDDINGS_PROVIDER":   "openai",
		"EMBEDDINGS_BASE_URL":   "http://ollama:11434/v1",
		"EMBEDDINGS_MODEL":      "embeddinggemma",
		"EMBEDDINGS_DIMENSIONS": "768",
		"LLM_BASE_URL":          "http://ollama:11434/v1",
		"LLM_MODEL":             "llama3.2:3b",
		"LLM_TOOL_MODE":         "native",
		"ADMIN_TOKEN":           "a-test-admin-token-0123456789",
		"DATABASE_URL":          "postgres://sitetools:a-test-password@postgres:5432/sitetools?sslmode=disable",
		"LISTEN_ADDR":           ":8080",
		"SITE_URL":              "http://localhost:8080",
		"TRUSTED_PROXIES":       p.Networks["edge"].Ipam.Config[0].Subnet,
	}
	for k, v := range want {
		if got := env[k]; got == nil || *got != v {
			t.Errorf("sitetools %s = %q, want %q", k, deref(got), v)
		}
	}
	// ollama-pull pulls the models that sitetools asks for: the ones its container's
	// shell finds in the environment.
	pull := svc("ollama-pull")
	for _, k := range []string{"EMBEDDINGS_MODEL", "LLM_MODEL"} {
		if got := deref(pull.Environment[k]); got != deref(env[k]) {
			t.Errorf("ollama-pull pulls %s %q, sitetools asks for %q", k, got, deref(env[k]))
		}
		if !strings.Contains(strings.Join(pull.Command, " "), `"$`+k+`"`) {
			t.Errorf("ollama-pull's command %q does not pull $%s", pull.Command, k)
		}
	}
	mounts := map[string]string{}
	for _, v := range svc("sitetools").Volumes {
		if !v.ReadOnly {
			t.Errorf("sitetools mounts %s writable", v.Target)
		}
		mounts[v.Target] = v.Source
	}
	for variable, source := range map[string]string{
		"SITE_PAGES_DIR":      filepath.Join("demo", "site"),
		"CHAT_PERSONA_FILE":   filepath.Join("demo", "persona.md"),
		"AVAILABILITY_CONFIG": "availability.example.yaml",
	} {
		target := deref(env[variable])
		if got := mounts[target]; got != filepath.Join(root(t), "deploy", source) {
			t.Errorf("%s=%q is mounted from %q, want deploy/%s", variable, target, got, source)
		}
		if _, err := os.Stat(filepath.Join(root(t), "deploy", source)); err != nil {
			t.Errorf("%s: %v", variable, err)
		}
	}
	// The admin API is published on the host's loopback only.
	for _, port := range svc("sitetools").Ports {
		if port.HostIP != "127.0.0.1" {
			t.Errorf("sitetools publishes port %d on %q, want 127.0.0.1 only", port.Target, port.HostIP)
		}
	}
}

// composeNetworks is the subtest "networks" of TestCompose.
func composeNetworks(t *testing.T, p *types.Project) {
	svc := func(name string) types.ServiceConfig { return p.Services[name] }
	if !p.Networks["backend"].Internal {
		t.Error("the backend network must be internal")
	}
	if nets := svc("postgres").Networks; len(nets) != 1 || !hasKey(nets, "backend") {
		t.Errorf("postgres is on %v, want backend only", slices.Collect(maps.Keys(nets)))
	}
	if _, ok := svc("proxy").Networks["edge"]; !ok {
		t.Error("the proxy is not on the edge network")
	}
}

// composeProxy is the subtest "proxy" of TestCompose.
func composeProxy(t *testing.T, p *types.Project) {
	svc := func(name string) types.ServiceConfig { return p.Services[name] }
	s := svc("proxy")
	mounted := false
	for _, v := range s.Volumes {
		if v.Source == filepath.Join(root(t), "deploy", "proxy", "nginx.conf") && v.Target == "/etc/nginx/nginx.conf" && v.ReadOnly {
			mounted = true
		}
	}
	if !mounted {
		t.Errorf("the proxy does not mount deploy/proxy/nginx.conf (the file nginx -t checks): %+v", s.Volumes)
	}
	if !s.ReadOnly || s.User == "" || s.User == "0" || !slices.Equal(s.CapDrop, []string{"ALL"}) {
		t.Errorf("proxy: read_only %v user %q cap_drop %v", s.ReadOnly, s.User, s.CapDrop)
	}
	if len(s.Ports) != 1 || s.Ports[0].Target != 8080 || s.Ports[0].Published != "8080" {
		t.Errorf("proxy ports %+v, want 8080 published", s.Ports)
	}
}

// composePostgres is the subtest "postgres" of TestCompose.
func composePostgres(t *testing.T, p *types.Project) {
	svc := func(name string) types.ServiceConfig { return p.Services[name] }
	s := svc("postgres")
	if !strings.HasPrefix(s.Image, "pgvector/pgvector:") {
		t.Errorf("postgres image %q, want pgvector/pgvector", s.Image)
	}
	if len(s.Volumes) != 1 || s.Volumes[0].Type != types.VolumeTypeVolume || s.Volumes[0].Source != "pgdata" {
		t.Errorf("postgres volumes %+v, want the named volume pgdata", s.Volumes)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func hasKey[V any](m map[string]V, k string) bool {
	_, ok := m[k]
	return ok
}

// TestComposeSync: the one-shot sitetools-sync (profile sync) re-crawls the sitemap in
// INGEST_SITEMAP_URL with sitetools' image, hardening and configuration, reaching the
// database and the model on the backend network and the site on egress; without its
// profile, `up` does not start it (TestCompose lists the services it does).
func TestComposeSync(t *testing.T) {
	env := exampleEnv(t)
	env["INGEST_SITEMAP_URL"] = "https://www.example.com/sitemap.xml"
	opts, err := cli.NewProjectOptions([]string{filepath.Join(root(t), "deploy", "compose.yaml")},
		cli.WithWorkingDirectory(filepath.Join(root(t), "deploy")), cli.WithEnv(envList(env)),
		cli.WithConsistency(true), cli.WithProfiles([]string{"sync"}))
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("deploy/compose.yaml does not load with the profile sync: %v", err)
	}
	s, ok := p.Services["sitetools-sync"]
	if !ok {
		t.Fatal("no service sitetools-sync in the profile sync")
	}
	serve := p.Services["sitetools"]
	if s.Image != serve.Image || !s.ReadOnly || !slices.Equal(s.CapDrop, []string{"ALL"}) ||
		!slices.Contains(s.SecurityOpt, "no-new-privileges:true") || s.User != dockerfileUser(t) {
		t.Errorf("sitetools-sync: image %q read_only %v cap_drop %v security_opt %v user %q, want sitetools' image and hardening",
			s.Image, s.ReadOnly, s.CapDrop, s.SecurityOpt, s.User)
	}
	if want := []string{"ingest", "--sitemap", "https://www.example.com/sitemap.xml"}; !slices.Equal(s.Command, want) {
		t.Errorf("sitetools-sync command %v, want %v", s.Command, want)
	}
	if s.Restart != "no" {
		t.Errorf("one-shot sitetools-sync restarts %q, want no", s.Restart)
	}
	for _, n := range []string{"backend", "egress"} {
		if !hasKey(s.Networks, n) {
			t.Errorf("sitetools-sync is not on the %s network", n)
		}
	}
	known := knownVariables(t)
	for k := range s.Environment {
		if !known[k] {
			t.Errorf("sitetools-sync sets %s, which is not a configuration variable", k)
		}
	}
	if _, err := config.Load(func(k string) string {
		if k == "ADMIN_LISTEN_ADDR" {
			return "off"
		}
		return deref(s.Environment[k])
	}); err != nil {
		t.Errorf("sitetools-sync: the configuration does not load:\n%v", err)
	}
	for _, k := range []string{"DATABASE_URL", "EMBEDDINGS_BASE_URL", "EMBEDDINGS_MODEL", "EMBEDDINGS_DIMENSIONS"} {
		if deref(s.Environment[k]) != deref(p.Services["sitetools"].Environment[k]) {
			t.Errorf("sitetools-sync %s = %q, sitetools %q: want the same index", k, deref(s.Environment[k]), deref(serve.Environment[k]))
		}
	}
}

func envList(env map[string]string) []string {
	var list []string
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	return list
}
