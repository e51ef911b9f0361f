package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sitetools/sitetools/internal/app"
	"github.com/sitetools/sitetools/internal/clientkey"
	"github.com/sitetools/sitetools/internal/insights"
	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/internal/postgres/pgtest"
)

// handoverSecret is the tests' CLIENT_KEY_SECRET.
const handoverSecret = "the replicas' client key secret, 32+ characters"

// handover is one POST /api/handover: the answer it names (-1: none, -2: a forged id)
// and the client it comes from (through a trusted proxy).
type handover struct {
	answer int
	client string
}

// handoverApp is a service on db whose clients are named by X-Forwarded-For, a function
// that sends h with the case's answer ids and returns the status, and the service's
// metrics.
func handoverApp(t *testing.T, db *postgres.DB) (func(h handover, ids []string) int, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg := testConfig(t, "postgres://unused", map[string]string{"TRUSTED_PROXIES": "192.0.2.1/32", "CLIENT_KEY_SECRET": handoverSecret})
	a, err := app.Wire(cfg, app.Parts{DB: db, Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	return func(h handover, ids []string) int {
		v := map[string]string{"tool": "prefill_contact_form"}
		switch {
		case h.answer >= 0:
			v["answerId"] = ids[h.answer]
		case h.answer == -2:
			v["answerId"] = altered(ids[0])
		}
		b, _ := json.Marshal(v)
		req := httptest.NewRequest(http.MethodPost, "/api/handover", bytes.NewReader(b)) // from 192.0.2.1
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Forwarded-For", h.client)
		rec := httptest.NewRecorder()
		a.Handler().ServeHTTP(rec, req)
		return rec.Code
	}, reg
}

// TestHandoverOnce: a hand-over with an answer id counts once per id; one without counts
// once per visitor (the rate limit's client: an address, an IPv6 /64) and day. Replays
// are 204 and count nothing; an id this site did not sign is 404 and counts nothing.
// The counter counts what the report counts.
func TestHandoverOnce(t *testing.T) {
	const none, forged = -1, -2
	for _, tc := range []struct {
		name   string
		sends  []handover
		status int
		want   int64
	}{
		{"the same answer id twice", []handover{{0, "198.51.100.1"}, {0, "198.51.100.1"}}, 204, 1},
		{"the same answer id from two addresses", []handover{{0, "198.51.100.1"}, {0, "198.51.100.2"}}, 204, 1},
		{"two answer ids", []handover{{0, "198.51.100.1"}, {1, "198.51.100.1"}}, 204, 2},
		{"no id twice from one address", []handover{{none, "198.51.100.1"}, {none, "198.51.100.1"}}, 204, 1},
		{"no id from two addresses", []handover{{none, "198.51.100.1"}, {none, "198.51.100.2"}}, 204, 2},
		{"no id from two addresses of one IPv6 /64", []handover{{none, "2001:db8:1:2::1"}, {none, "2001:db8:1:2::2"}}, 204, 1},
		{"no id from two IPv6 networks", []handover{{none, "2001:db8:1:2::1"}, {none, "2001:db8:1:3::1"}}, 204, 2},
		{"an answer id, then none from the same address", []handover{{0, "198.51.100.1"}, {none, "198.51.100.1"}, {none, "198.51.100.1"}}, 204, 2},
		{"an id this site did not sign", []handover{{forged, "198.51.100.1"}, {forged, "198.51.100.2"}}, 404, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := pgtest.NewDB(t)
			send, reg := handoverApp(t, db)
			var ids []string
			for range 2 {
				id, err := insights.NewAnswerIDs(db.Pool, nil).Issue(context.Background(), insights.KindModel)
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			for i, h := range tc.sends {
				if got := send(h, ids); got != tc.status {
					t.Fatalf("hand-over %d %+v: %d, want %d", i, h, got, tc.status)
				}
			}
			var want []string
			if tc.want > 0 {
				want = []string{fmt.Sprintf("handover_called prefill_contact_form %d", tc.want)}
			}
			if got := feedbackCounts(t, db); !slices.Equal(got, want) {
				t.Errorf("activity_daily %q, want %q", got, want)
			}
			if got := handoversCalled(t, reg); got != float64(tc.want) {
				t.Errorf("sitetools_handovers_total{how=called} %v, want %d", got, tc.want)
			}
		})
	}
}

// handoversCalled is the value of sitetools_handovers_total{how="called"} in reg.
func handoversCalled(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "sitetools_handovers_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "how" && l.GetValue() == "called" {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatal("no sitetools_handovers_total{how=called}")
	return 0
}

// TestHandoverKeepsNoAddress: counted_handovers holds the SHA-256 of an answer id, and
// for a visitor a keyed hash of the day under the secret, which is not in the database:
// not the address in any form, nor the name the budgets' shares give the same visitor.
func TestHandoverKeepsNoAddress(t *testing.T) {
	db := pgtest.NewDB(t)
	send, _ := handoverApp(t, db)
	id, err := insights.NewAnswerIDs(db.Pool, nil).Issue(context.Background(), insights.KindModel)
	if err != nil {
		t.Fatal(err)
	}
	const v4, v6 = "198.51.100.77", "2001:db8:77:1::5"
	for _, h := range []handover{{-1, v4}, {-1, v6}, {0, v4}} {
		if got := send(h, []string{id}); got != http.StatusNoContent {
			t.Fatalf("hand-over %+v: %d", h, got)
		}
	}
	rows, err := db.Pool.Query(context.Background(), `SELECT key FROM counted_handovers ORDER BY length(key), key`)
	if err != nil {
		t.Fatal(err)
	}
	var keys [][]byte
	for rows.Next() {
		var k []byte
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	if rows.Err() != nil || len(keys) != 3 {
		t.Fatalf("counted_handovers has %d rows (%v), want 3", len(keys), rows.Err())
	}
	sum := sha256.Sum256([]byte(id))
	if !bytes.Equal(keys[2], sum[:]) {
		t.Errorf("the answer's row %x, want the id's SHA-256 %x", keys[2], sum)
	}
	hasher := clientkey.New([]byte(handoverSecret))
	today := time.Now()
	var named [][]byte
	for _, client := range []string{v4, "2001:db8:77:1::/64"} { // the rate limit's keys
		named = append(named, hasher.Key("sitetools hand-over", today, client))
		if slices.ContainsFunc(keys[:2], func(k []byte) bool { return bytes.Equal(k, hasher.Key("sitetools client share", today, client)) }) {
			t.Errorf("a row is the budgets' name of %s", client)
		}
	}
	if !slices.ContainsFunc(keys[:2], func(k []byte) bool { return bytes.Equal(k, named[0]) }) ||
		!slices.ContainsFunc(keys[:2], func(k []byte) bool { return bytes.Equal(k, named[1]) }) {
		t.Errorf("the visitors' rows %x are not their keyed names of today %x", keys[:2], named)
	}
	for _, addr := range []string{v4, v6, "2001:db8:77:1::/64", "2001:db8:77:1::"} {
		forms := [][]byte{[]byte(addr), []byte(hex.EncodeToString([]byte(addr)))}
		if a, err := netip.ParseAddr(addr); err == nil {
			forms = append(forms, a.AsSlice(), []byte(hex.EncodeToString(a.AsSlice())))
		}
		s := sha256.Sum256([]byte(addr))
		forms = append(forms, s[:16], s[:])
		for _, k := range keys {
			for _, f := range forms {
				if bytes.Contains(k, f) || bytes.Contains(f, k) {
					t.Errorf("row %x holds %s as %x", k, addr, f)
				}
			}
		}
	}
}
