package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sitetools/sitetools/internal/postgres"
	"github.com/sitetools/sitetools/tools"
	"github.com/sitetools/sitetools/tools/appointments"
)

func appointmentsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const help = "usage: sitetools appointments add --start T --end T [--title S] [--attendee S] [--notes S] [--key K]\n" +
		"       sitetools appointments list [--from T] [--to T] [--cancelled]\n" +
		"       sitetools appointments cancel ID\n" +
		"T is RFC 3339, e.g. 2026-12-01T10:00:00+01:00"
	if len(args) == 0 {
		fmt.Fprintln(stderr, help)
		return usageError{"appointments needs add, list or cancel"}
	}
	// The command line is checked before the database is opened.
	withStore := func(fn func(*appointments.Bookings) error) error {
		cfg, err := configForTool()
		if err != nil {
			return err
		}
		db, err := postgres.Open(ctx, cfg.DatabaseURL, 2)
		if err != nil {
			return err
		}
		defer db.Close()
		return fn(appointments.NewBookings(db))
	}

	fs := flag.NewFlagSet("appointments "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	timeFlag := func(name, usage string) *time.Time {
		t := new(time.Time)
		fs.Func(name, usage, func(s string) error {
			v, err := time.Parse(time.RFC3339, s)
			*t = v
			return err
		})
		return t
	}
	switch args[0] {
	case "add":
		start, end := timeFlag("start", "start (RFC 3339)"), timeFlag("end", "end (RFC 3339)")
		title := fs.String("title", "", "what it is about")
		attendee := fs.String("attendee", "", "who attends")
		notes := fs.String("notes", "", "notes")
		key := fs.String("key", "", "idempotency key: adding twice with the same key stores one booking")
		if err := fs.Parse(args[1:]); err != nil || fs.NArg() > 0 {
			return usageError{help}
		}
		return withStore(func(store *appointments.Bookings) error {
			c, err := store.Add(ctx, appointments.NewBooking{Start: *start, End: *end, Title: *title, Attendee: *attendee, Notes: *notes}, *key)
			if err != nil {
				return cliError(err)
			}
			verb := "added"
			if c.Replayed {
				verb = "already added"
			}
			fmt.Fprintf(stdout, "%s %s  %s – %s\n", verb, c.Booking.ID, c.Booking.Start.Format(time.RFC3339), c.Booking.End.Format(time.RFC3339))
			if len(c.Overlaps) > 0 {
				fmt.Fprintf(stdout, "note: overlaps %s\n", strings.Join(c.Overlaps, ", "))
			}
			return nil
		})
	case "list":
		from, to := timeFlag("from", "from (RFC 3339, default now)"), timeFlag("to", "to (RFC 3339, default from + 31 days)")
		cancelled := fs.Bool("cancelled", false, "include cancelled bookings")
		if err := fs.Parse(args[1:]); err != nil || fs.NArg() > 0 {
			return usageError{help}
		}
		if from.IsZero() {
			*from = time.Now()
		}
		if to.IsZero() {
			*to = from.AddDate(0, 0, 31)
		}
		return withStore(func(store *appointments.Bookings) error {
			list, err := store.List(ctx, *from, *to, *cancelled)
			if err != nil {
				return cliError(err)
			}
			w := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tSTART\tEND\tTITLE\tATTENDEE\tSTATUS")
			for _, b := range list {
				status := "active"
				if b.CancelledAt != nil {
					status = "cancelled"
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\n", b.ID, b.Start.Format(time.RFC3339), b.End.Format(time.RFC3339), b.Title, b.Attendee, status)
			}
			return w.Flush()
		})
	case "cancel":
		if len(args) != 2 {
			return usageError{help}
		}
		return withStore(func(store *appointments.Bookings) error {
			b, err := store.Cancel(ctx, args[1])
			if err != nil {
				return cliError(err)
			}
			fmt.Fprintf(stdout, "cancelled %s\n", b.ID)
			return nil
		})
	}
	fmt.Fprintln(stderr, help)
	return usageError{fmt.Sprintf("unknown appointments command %q", args[0])}
}

// cliError shows a coded error's message rather than its internals.
func cliError(err error) error {
	var e *tools.Error
	if errors.As(err, &e) && e.Code != tools.CodeInternal {
		return errors.New(e.Message)
	}
	return err
}
