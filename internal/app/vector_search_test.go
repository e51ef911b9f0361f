package app_test

import (
	"testing"

	"github.com/sitetools/sitetools/internal/config"
	"github.com/sitetools/sitetools/internal/postgres"
)

// TestVectorSearchDefaults: the configuration's defaults of SEARCH_EF_SEARCH and
// SEARCH_ITERATIVE_SCAN are postgres.Open's, so that every caller of Open searches alike.
func TestVectorSearchDefaults(t *testing.T) {
	if config.DefaultEFSearch != postgres.DefaultEFSearch || config.DefaultIterativeScan != postgres.DefaultIterativeScan {
		t.Errorf("config: ef_search %d, iterative scan %q; postgres: %d, %q", config.DefaultEFSearch, config.DefaultIterativeScan,
			postgres.DefaultEFSearch, postgres.DefaultIterativeScan)
	}
	cfg, err := config.Load(func(string) string { return "" }, config.AreaSearch)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Search.EFSearch != postgres.DefaultEFSearch || cfg.Search.IterativeScan != postgres.DefaultIterativeScan {
		t.Errorf("loaded %+v", cfg.Search)
	}
}
