package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The cost guard's books as the cluster keeps them in PostgreSQL: the ledger, the
// budget leases, and the admin usage report of each replica.

// ledgerRows returns how many ledger rows of kind match tool and outcome ("" matches
// any), and the sum of their tokens.
func ledgerRows(t *testing.T, conn *pgx.Conn, kind, tool, outcome string) (rows, tokens int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := conn.QueryRow(ctx, `SELECT count(*), coalesce(sum(tokens), 0)::bigint FROM ledger
		WHERE kind = $1 AND ($2 = '' OR tool = $2) AND ($3 = '' OR outcome = $3)`, kind, tool, outcome).Scan(&rows, &tokens)
	if err != nil {
		t.Fatalf("ledger of %s: %v", kind, err)
	}
	return rows, tokens
}

// ledgerSummary is the ledger of kind by tool and outcome, for the log.
func ledgerSummary(t *testing.T, conn *pgx.Conn, kind string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := conn.Query(ctx, `SELECT tool, outcome, count(*), coalesce(sum(tokens), 0)::bigint FROM ledger
		WHERE kind = $1 GROUP BY 1, 2 ORDER BY 1, 2`, kind)
	if err != nil {
		t.Fatalf("ledger of %s: %v", kind, err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var tool, outcome string
		var n, tokens int64
		if err := rows.Scan(&tool, &outcome, &n, &tokens); err != nil {
			t.Fatalf("ledger of %s: %v", kind, err)
		}
		fmt.Fprintf(&b, " %s/%s: %d rows, %d tokens;", tool, outcome, n, tokens)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("ledger of %s: %v", kind, err)
	}
	return strings.TrimSpace(b.String())
}

// waitIdle waits until no replica holds tokens of kind's budget: every lease given back
// (reserved 0), which an idle replica does within half a second, and the settled spend
// therefore in used. It returns used.
func waitIdle(t *testing.T, conn *pgx.Conn, kind string) int64 {
	t.Helper()
	var used, reserved int64
	waitFor(t, 15*time.Second, fmt.Sprintf("the %s budget still has tokens reserved once idle", kind), func() bool {
		used, reserved = budgetRow(t, conn, kind)
		return reserved == 0
	})
	return used
}

// checkLeases fails the test for every budget lease that has expired and is still there:
// a lease is renewed while its replica lives and reclaimed once expired, so after the
// cluster is idle none may be left past its expiry.
func checkLeases(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := conn.Query(ctx, `SELECT id, kind, holder, granted, (now() - expires_at)::text
		FROM budget_leases WHERE expires_at <= now()`)
	if err != nil {
		t.Fatalf("budget leases: %v", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, granted int64
		var kind, holder, past string
		if err := rows.Scan(&id, &kind, &holder, &granted, &past); err != nil {
			t.Fatalf("budget leases: %v", err)
		}
		t.Errorf("lease %d (%s, holder %s, %d tokens) expired %s ago and is still there", id, kind, holder, granted, past)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("budget leases: %v", err)
	}
}

// lease is a row of budget_leases.
type lease struct {
	id, granted int64
	holder      string
	expires     time.Time
}

// leasesOf returns the budget leases of kind held by the process pid.
func leasesOf(t *testing.T, conn *pgx.Conn, kind string, pid int) []lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rows, err := conn.Query(ctx, `SELECT id, granted, holder, expires_at FROM budget_leases
		WHERE kind = $1 AND holder LIKE '%:' || $2::text ORDER BY id`, kind, strconv.Itoa(pid))
	if err != nil {
		t.Fatalf("budget leases: %v", err)
	}
	defer rows.Close()
	var out []lease
	for rows.Next() {
		var l lease
		if err := rows.Scan(&l.id, &l.granted, &l.holder, &l.expires); err != nil {
			t.Fatalf("budget leases: %v", err)
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("budget leases: %v", err)
	}
	return out
}

// leaseExists reports whether the budget lease id is still there.
func leaseExists(t *testing.T, conn *pgx.Conn, id int64) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM budget_leases WHERE id = $1`, id).Scan(&n); err != nil {
		t.Fatalf("budget leases: %v", err)
	}
	return n > 0
}

// usageReport is the part of a replica's GET /admin/usage that the tests read.
type usageReport struct {
	Budgets []struct {
		Kind     string `json:"kind"`
		Limit    int64  `json:"limit"`
		Reserved int64  `json:"reserved"`
		Used     int64  `json:"used"`
	} `json:"budgets"`
	Ledger []struct {
		Kind      string `json:"kind"`
		Tool      string `json:"tool"`
		Calls     int64  `json:"providerCalls"`
		Unknown   int64  `json:"unknown"`
		Saved     int64  `json:"callsSaved"`
		Tokens    int64  `json:"tokens"`
		CacheHits int64  `json:"cacheHits"`
	} `json:"ledger"`
	Breakers []breakerStatus `json:"breakers"`
}

// breakerStatus is one provider's circuit in the usage report.
type breakerStatus struct {
	Kind        string    `json:"kind"`
	State       string    `json:"state"`
	OpenedTotal int64     `json:"openedTotal"`
	CallsSaved  int64     `json:"callsSaved"`
	Until       time.Time `json:"until"`
}

// usage reads the admin usage report of the replica whose admin listener is adminURL.
func usage(t *testing.T, adminURL string) usageReport {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, adminURL+"/admin/usage?days=1", nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("usage report: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("usage report: status %d, %v: %.300s", resp.StatusCode, err, b)
	}
	var r usageReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("usage report: %v: %.300s", err, b)
	}
	return r
}

// breaker returns the circuit of kind in the usage report; it fails the test if the
// report has none.
func (r usageReport) breaker(t *testing.T, kind string) breakerStatus {
	t.Helper()
	for _, b := range r.Breakers {
		if b.Kind == kind {
			return b
		}
	}
	t.Fatalf("the usage report has no %s breaker: %+v", kind, r.Breakers)
	return breakerStatus{}
}

// breakerTotals sums, over the cluster's replicas, how often their circuit of kind opened
// and how many calls it saved (the metrics), and lists each replica's figures.
func breakerTotals(t *testing.T, c *cluster, kind string) (opened, saved float64, each string) {
	t.Helper()
	labels := map[string]string{"kind": kind}
	var b strings.Builder
	for i := range c.replicas {
		if c.replicas[i].proc.Alive() != nil {
			continue
		}
		o := metric(t, c.Admin(i), "sitetools_provider_breaker_opened_total", labels)
		s := metric(t, c.Admin(i), "sitetools_provider_breaker_calls_saved_total", labels)
		st := metric(t, c.Admin(i), "sitetools_provider_breaker_state", labels)
		opened, saved = opened+o, saved+s
		fmt.Fprintf(&b, " replica %d: opened %.0f, saved %.0f, state %.0f;", i, o, s, st)
	}
	return opened, saved, strings.TrimSpace(b.String())
}
