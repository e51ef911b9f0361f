package cli

import (
	"context"
	"encoding/json"
	"flag"
	"io"

	"github.com/sitetools/sitetools/internal/insights"
)

// reportCmd prints what the owner learns without anything a visitor typed: ratings of
// answers, searches that found nothing relevant, fallbacks, hand-overs and the pages
// answers cite, over the last days (`sitetools report [--days N] [--format F]`).
func reportCmd(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	days := fs.Int("days", 7, "days to report, today included")
	format := fs.String("format", "text", "text, json or markdown")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 || *days < 1 || *days > 366 {
		return usageError{"report takes --days N (1 to 366) and --format text|json|markdown"}
	}
	switch *format {
	case "text", "json", "markdown":
	default:
		return usageError{"report --format is text, json or markdown"}
	}
	_, db, err := openFor(ctx, 2)
	if err != nil {
		return err
	}
	defer db.Close()
	r, err := insights.Read(ctx, db.Pool, *days)
	if err != nil {
		return err
	}
	switch *format {
	case "json":
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case "markdown":
		r.WriteMarkdown(stdout)
	default:
		r.WriteText(stdout)
	}
	return nil
}
