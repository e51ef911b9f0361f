package e2e_test

import (
	"debug/buildinfo"
	"debug/elf"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sitetools/sitetools/internal/testkit"
)

// TestDockerfileBuild: the binary every test here runs was built by the Dockerfile's
// own command, and it is what the distroless runtime stage needs: static, cgo off,
// trimmed paths, stripped, with the version from the build argument.
func TestDockerfileBuild(t *testing.T) {
	cmd, out, err := dockerfileBuildCommand()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Dockerfile build command: %s", cmd)
	if !strings.Contains(cmd, "CGO_ENABLED=0") {
		t.Errorf("the Dockerfile builds with cgo: %s", cmd)
	}
	// The runtime stage copies what the build wrote.
	docker, err := os.ReadFile(filepath.Join(repoRoot(), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^COPY --from=build ` + regexp.QuoteMeta(out) + ` `).Match(docker) {
		t.Errorf("the runtime stage does not copy %s", out)
	}
	if !regexp.MustCompile(`(?m)^FROM gcr\.io/distroless/static`).Match(docker) {
		t.Error("the runtime stage is not distroless/static: a static binary is what it needs")
	}

	f, err := elf.Open(binary)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the binary is dynamically linked (program header %v)", p.Type)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v", libs)
	}
	if f.Section(".symtab") != nil {
		t.Error("the binary has a symbol table: -s was not applied")
	}

	info, err := buildinfo.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" {
		t.Errorf("build settings CGO_ENABLED=%q -trimpath=%q, want 0 and true", settings["CGO_ENABLED"], settings["-trimpath"])
	}
	if got := testkit.Run(t, binary, nil, "version"); strings.TrimSpace(got) != "sitetools "+buildVersion {
		t.Errorf("sitetools version printed %q, want the build argument %q", got, buildVersion)
	}
}
