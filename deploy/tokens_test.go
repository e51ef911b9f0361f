package deploy_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// adminTokenVariables are sitetools' admin tokens: ADMIN_TOKEN opens every scope, the
// others one each.
var adminTokenVariables = []string{"ADMIN_TOKEN", "ADMIN_HOOK_TOKEN", "ADMIN_REPORT_TOKEN", "ADMIN_BOOKINGS_TOKEN"}

// wordAdminToken is ADMIN_TOKEN as a name of its own, not part of another.
var wordAdminToken = regexp.MustCompile(`(^|[^A-Za-z0-9_])ADMIN_TOKEN([^A-Za-z0-9_]|$)`)

// TestAdminTokensInRecipes: what the recipes hand to a CMS, a frontend or a scheduled
// job opens the publish hook at most, never every admin scope. A leaked TYPO3 or
// Next.js configuration, or a CronJob's pod, must not read visitors' bookings.
func TestAdminTokensInRecipes(t *testing.T) {
	for _, r := range []tokenRecipe{
		{"typo3", filepath.Join("deploy", "typo3"), regexp.MustCompile(`(?:self::env|getenv)\('([A-Z0-9_]+)'\)`), filepath.Join("deploy", "typo3", "README.md")},
		{"nextjs", filepath.Join("deploy", "nextjs"), regexp.MustCompile(`process\.env\.([A-Z0-9_]+)`), filepath.Join("deploy", "nextjs", "README.md")},
	} {
		t.Run(r.name, func(t *testing.T) { checkRecipeTokens(t, r) })
	}
	t.Run("k8s", checkK8sTokens)
	t.Run("compose", checkComposeTokens)
}

// tokenRecipe is a recipe that calls sitetools' admin API from a CMS or a frontend.
type tokenRecipe struct {
	name   string
	dir    string         // every file of the recipe
	reads  *regexp.Regexp // how its code reads an environment variable
	readme string
}

// checkRecipeTokens: no file of r names ADMIN_TOKEN, the one sitetools token its code
// reads is the hook's, and its README says which of sitetools' tokens to give it.
func checkRecipeTokens(t *testing.T, r tokenRecipe) {
	tokens := recipeTokenReads(t, r)
	if len(tokens) != 1 || !tokens["SITETOOLS_HOOK_TOKEN"] {
		t.Fatalf("the recipe reads the token variables %v, want SITETOOLS_HOOK_TOKEN alone", tokens)
	}
	row := regexp.MustCompile("(?m)^\\| `SITETOOLS_HOOK_TOKEN` \\|.*$").FindString(string(readFile(t, filepath.Join(root(t), r.readme))))
	if !strings.Contains(row, "`ADMIN_HOOK_TOKEN`") {
		t.Errorf("%s does not document SITETOOLS_HOOK_TOKEN as sitetools' ADMIN_HOOK_TOKEN: %q", r.readme, row)
	}
}

// recipeTokenReads walks r's files (not its dependencies or build output): it reports
// every line that names ADMIN_TOKEN, and returns the SITETOOLS_…_TOKEN variables its
// code reads.
func recipeTokenReads(t *testing.T, r tokenRecipe) map[string]bool {
	t.Helper()
	tokens := map[string]bool{}
	err := filepath.WalkDir(filepath.Join(root(t), r.dir), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".next" || d.Name() == "vendor") {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name() == "package-lock.json" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root(t), path)
		for i, line := range strings.Split(string(b), "\n") {
			if wordAdminToken.MatchString(line) {
				t.Errorf("%s:%d names ADMIN_TOKEN, which opens every admin scope; the recipe gets ADMIN_HOOK_TOKEN: %s", rel, i+1, strings.TrimSpace(line))
			}
		}
		for _, m := range r.reads.FindAllStringSubmatch(string(b), -1) {
			if strings.HasPrefix(m[1], "SITETOOLS_") && strings.HasSuffix(m[1], "_TOKEN") {
				tokens[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tokens
}

// checkK8sTokens: the manifests' jobs get no admin token, and the service has the hook's
// and the report's, each a token of its own.
func checkK8sTokens(t *testing.T) {
	m := loadManifests(t)
	secret := one[corev1.Secret](t, m)
	configMaps := map[string]*corev1.ConfigMap{}
	for _, objs := range m {
		for _, o := range objs {
			if cm, ok := o.(*corev1.ConfigMap); ok {
				configMaps[cm.Name] = cm
			}
		}
	}
	// The jobs (the sync CronJob, the migration) read the database and the
	// providers, never the admin API: no admin token reaches their pods.
	jobs := map[string]corev1.PodSpec{
		"sync CronJob":  one[batchv1.CronJob](t, m).Spec.JobTemplate.Spec.Template.Spec,
		"migration Job": one[batchv1.Job](t, m).Spec.Template.Spec,
	}
	for name, spec := range jobs {
		checkJobGetsNoAdminToken(t, name, spec, configMaps, secret)
	}
	// The service itself has the hook's and the report's tokens, each its own.
	deploy := one[appsv1.Deployment](t, m)
	cfg := podConfig(t, deploy.Spec.Template.Spec.Containers[0], configMaps, secret)
	if cfg.AdminHookToken == "" || cfg.AdminReportToken == "" {
		t.Errorf("the Deployment has no ADMIN_HOOK_TOKEN or ADMIN_REPORT_TOKEN from the Secret")
	}
	seen := map[string]string{}
	for _, v := range adminTokenVariables {
		if tok := secret.StringData[v]; tok != "" {
			if other, ok := seen[tok]; ok {
				t.Errorf("the Secret's %s and %s are the same token: one would open the other's scope", other, v)
			}
			seen[tok] = v
		}
	}
}

// checkJobGetsNoAdminToken: no container of the job's pod spec gets an admin token, by
// its environment as a whole or by a reference to the Secret's.
func checkJobGetsNoAdminToken(t *testing.T, name string, spec corev1.PodSpec, configMaps map[string]*corev1.ConfigMap, secret *corev1.Secret) {
	t.Helper()
	for _, c := range append(spec.InitContainers, spec.Containers...) {
		env := podEnv(t, c, configMaps, secret)
		for _, v := range adminTokenVariables {
			if _, ok := env[v]; ok {
				t.Errorf("the %s's container %s gets %s: it calls no admin API", name, c.Name, v)
			}
		}
		for _, e := range c.Env {
			if r := e.ValueFrom; r != nil && r.SecretKeyRef != nil && slices.Contains(adminTokenVariables, r.SecretKeyRef.Key) {
				t.Errorf("the %s's %s is the Secret's %s", name, e.Name, r.SecretKeyRef.Key)
			}
		}
	}
}

// checkComposeTokens: in compose, only sitetools itself has admin tokens, and its hook
// token is deploy/.env's.
func checkComposeTokens(t *testing.T) {
	env := exampleEnv(t)
	env["ADMIN_HOOK_TOKEN"] = "a-test-hook-token-0123456789"
	p, err := loadCompose(t, env)
	if err != nil {
		t.Fatalf("deploy/compose.yaml does not load: %v", err)
	}
	for name, s := range p.Services {
		for _, v := range adminTokenVariables {
			if _, ok := s.Environment[v]; ok && name != "sitetools" {
				t.Errorf("compose service %s gets %s; only sitetools itself has admin tokens", name, v)
			}
		}
	}
	if got := deref(p.Services["sitetools"].Environment["ADMIN_HOOK_TOKEN"]); got != env["ADMIN_HOOK_TOKEN"] {
		t.Errorf("sitetools' ADMIN_HOOK_TOKEN = %q, want deploy/.env's %q", got, env["ADMIN_HOOK_TOKEN"])
	}
}
