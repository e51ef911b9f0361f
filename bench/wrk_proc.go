package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
)

// outOfProcessPair is the catalog as an operator serves it: the `sitetools serve`
// binary, built as the deployed scenarios build it, a process of its own on the bench
// database, logging at info as deploy/ ships it (JSON on stderr) into a file, as a
// container runtime captures it; and bench/wrkbare, a bare net/http server of its own
// process, given the bytes and headers serve answered with.
func outOfProcessPair(ctx context.Context, env sectionEnv) (_ *wrkPair, stop func(), err error) {
	var stops stack
	defer func() {
		if err != nil {
			stops.run()
		}
	}()
	dir, err := os.MkdirTemp("", "sitetools-bench-wrk-")
	if err != nil {
		return nil, nil, err
	}
	stops.push(func() { os.RemoveAll(dir) })
	bin, err := buildServe(ctx, dir, env.dbURL, env.stderr)
	if err != nil {
		return nil, nil, err
	}
	barePath, err := buildBare(ctx, bin.root, dir)
	if err != nil {
		return nil, nil, err
	}
	svc, err := bin.start(ctx, nil)
	if err != nil {
		return nil, nil, err
	}
	stops.push(svc.stop)
	answer, err := catalogAnswer(svc.addr)
	if err != nil {
		return nil, nil, err
	}
	bare, err := startBare(ctx, barePath, bin.root, dir, answer)
	if err != nil {
		return nil, nil, err
	}
	stops.push(bare.stop)
	p := &wrkPair{
		name: "out of process",
		about: "`sitetools serve` (serve's own tools), LOG_LEVEL=info, its output into a file, and bench/wrkbare, a bare " +
			"`net/http` server of its own process writing the bytes and headers serve answered with; each side's CPU is its " +
			"own process's",
		bodyBytes: len(answer.body),
		subject:   wrkSide{label: "sitetools serve", addr: svc.addr, cpu: svc.cpu, proc: svc},
		baseline:  wrkSide{label: "net/http", addr: bare.addr, cpu: bare.cpu, proc: bare},
	}
	if p.notes, err = sameAnswer(p); err != nil {
		return nil, nil, err
	}
	before := p.notes
	p.finish = func() ([]string, error) {
		note, err := requestLines(svc, p.requests)
		return append(before, note), err
	}
	return p, stops.run, nil
}

// buildBare builds bench/wrkbare into dir.
func buildBare(ctx context.Context, root, dir string) (string, error) {
	path := filepath.Join(dir, "wrkbare")
	cmd := exec.CommandContext(ctx, "go", "build", "-ldflags", "-s -w", "-o", path, "./bench/wrkbare")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./bench/wrkbare: %w\n%s", err, out)
	}
	return path, nil
}

// catalogResponse is an answer to GET /api/chat/tools.
type catalogResponse struct {
	header http.Header
	body   []byte
}

func catalogRequest() request {
	return request{method: http.MethodGet, path: "/api/chat/tools", header: http.Header{"Accept": {"application/json"}}}
}

// catalogAnswer asks the service at addr for its catalog, as wrk will.
func catalogAnswer(addr string) (catalogResponse, error) {
	resp, body, err := probe(target{label: "sitetools serve", addr: addr, req: catalogRequest()})
	if err != nil {
		return catalogResponse{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return catalogResponse{}, fmt.Errorf("GET /api/chat/tools: status %d: %.300s", resp.StatusCode, body)
	}
	return catalogResponse{header: resp.Header, body: body}, nil
}

// startBare starts bench/wrkbare with answer's body and every header of it but Date
// (which net/http writes itself) and Content-Length (which wrkbare does).
func startBare(ctx context.Context, path, root, dir string, answer catalogResponse) (*proc, error) {
	body := filepath.Join(dir, "catalog.json")
	if err := os.WriteFile(body, answer.body, 0o600); err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	argv := []string{path, "-addr", addr, "-body", body}
	for k, vs := range answer.header {
		if k == "Date" || k == "Content-Length" {
			continue
		}
		for _, v := range vs {
			argv = append(argv, "-header", k+": "+v)
		}
	}
	return startProc(ctx, "wrkbare", root, dir, argv, []string{"PATH=" + os.Getenv("PATH")}, addr, httpReady("/api/chat/tools", http.StatusOK))
}

// sameAnswer fails unless both sides answer the request wrk sends with the same
// status, body and headers (Date aside).
func sameAnswer(p *wrkPair) ([]string, error) {
	resp, _, err := probe(target{label: p.subject.label, addr: p.subject.addr, req: catalogRequest()})
	if err != nil {
		return nil, err
	}
	var same []string
	for k := range resp.Header {
		if k != "Date" {
			same = append(same, k)
		}
	}
	slices.Sort(same)
	return checkParity(scenario{
		same:     same,
		subject:  target{label: p.subject.label, addr: p.subject.addr, req: catalogRequest(), want: http.StatusOK},
		baseline: target{label: p.baseline.label, addr: p.baseline.addr, req: catalogRequest(), want: http.StatusOK},
	})
}

// requestLines stops serve (SIGTERM, as an orchestrator stops it) and counts the request
// lines of the catalog in its output: one for every request wrk completed, or more
// (the probes, requests cut off at the end of a round), never fewer.
func requestLines(svc *proc, requests int) (string, error) {
	_ = svc.cmd.Process.Signal(syscall.SIGTERM)
	<-svc.done
	f, err := os.Open(svc.log.Name())
	if err != nil {
		return "", err
	}
	defer f.Close()
	lines, size := 0, int64(0)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	want := []byte(`"msg":"request","method":"GET","route":"/api/chat/tools","status":200,`)
	for sc.Scan() {
		size += int64(len(sc.Bytes())) + 1
		if bytes.Contains(sc.Bytes(), want) {
			lines++
		}
	}
	if err := sc.Err(); err != nil && err != io.EOF {
		return "", err
	}
	if lines < requests {
		return "", fmt.Errorf("serve's output holds %d request lines of the catalog for %d requests wrk completed", lines, requests)
	}
	return fmt.Sprintf("serve's request log: %d lines of the catalog for the %d requests wrk completed (warm-up included), %s of output in all",
		lines, requests, megabytes(size)), nil
}

// exited says, for an error report, whether p has exited, and the end of its output.
func exited(p *proc) string {
	if p == nil {
		return ""
	}
	select {
	case <-p.done:
	default:
		return " (the process still runs)"
	}
	tail := make([]byte, 4<<10)
	at := int64(0)
	if fi, err := p.log.Stat(); err == nil && fi.Size() > int64(len(tail)) {
		at = fi.Size() - int64(len(tail))
	}
	n, _ := p.log.ReadAt(tail, at)
	return fmt.Sprintf(" (the process exited: %v; the end of its output:\n%s)", p.err, tail[:n])
}
