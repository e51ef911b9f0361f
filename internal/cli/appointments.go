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

const appointmentsHelp = "usage: sitetools appointments add --start T --end T [--title S] [--attendee S] [--notes S] [--key K]\n" +
	"       sitetools appointments list [--from T] [--to T] [--cancelled]\n" +
	"       sitetools appointments cancel ID\n" +
	"T is RFC 3339, e.g. 2026-12-01T10:00:00+01:00"

// appointmentsCLI is one run of `sitetools appointments`: its flags, and the bookings
// store, opened only once the command line is known to be right.
type appointmentsCLI struct {
	ctx    context.Context
	fs     *flag.FlagSet
	stdout io.Writer
}

func appointmentsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, appointmentsHelp)
		return usageError{"appointments needs add, list or cancel"}
	}
	c := &appointmentsCLI{ctx: ctx, fs: flag.NewFlagSet("appointments "+args[0], flag.ContinueOnError), stdout: stdout}
	c.fs.SetOutput(stderr)
	switch args[0] {
	case "add":
		return c.add(args[1:])
	case "list":
		return c.list(args[1:])
	case "cancel":
		if len(args) != 2 {
			return usageError{appointmentsHelp}
		}
		return c.withStore(func(store appointments.BookingStore) error {
			b, err := store.Cancel(ctx, args[1])
			if err != nil {
				return cliError(err)
			}
			fmt.Fprintf(stdout, "cancelled %s\n", b.ID)
			return nil
		})
	}
	fmt.Fprintln(stderr, appointmentsHelp)
	return usageError{fmt.Sprintf("unknown appointments command %q", args[0])}
}

// withStore opens the database and runs fn on its bookings.
func (c *appointmentsCLI) withStore(fn func(appointments.BookingStore) error) error {
	_, db, err := openFor(c.ctx, 2)
	if err != nil {
		return err
	}
	defer db.Close()
	return fn(postgres.NewBookings(db))
}

// timeFlag declares an RFC 3339 flag.
func (c *appointmentsCLI) timeFlag(name, usage string) *time.Time {
	t := new(time.Time)
	c.fs.Func(name, usage, func(s string) error {
		v, err := time.Parse(time.RFC3339, s)
		*t = v
		return err
	})
	return t
}

func (c *appointmentsCLI) add(args []string) error {
	start, end := c.timeFlag("start", "start (RFC 3339)"), c.timeFlag("end", "end (RFC 3339)")
	title := c.fs.String("title", "", "what it is about")
	attendee := c.fs.String("attendee", "", "who attends")
	notes := c.fs.String("notes", "", "notes")
	key := c.fs.String("key", "", "idempotency key: adding twice with the same key stores one booking")
	if err := c.fs.Parse(args); err != nil || c.fs.NArg() > 0 {
		return usageError{appointmentsHelp}
	}
	return c.withStore(func(store appointments.BookingStore) error {
		added, err := store.Add(c.ctx, appointments.NewBooking{Start: *start, End: *end, Title: *title, Attendee: *attendee, Notes: *notes}, *key)
		if err != nil {
			return cliError(err)
		}
		verb := "added"
		if added.Replayed {
			verb = "already added"
		}
		fmt.Fprintf(c.stdout, "%s %s  %s – %s\n", verb, added.Booking.ID, added.Booking.Start.Format(time.RFC3339), added.Booking.End.Format(time.RFC3339))
		if len(added.Overlaps) > 0 {
			fmt.Fprintf(c.stdout, "note: overlaps %s\n", strings.Join(added.Overlaps, ", "))
		}
		return nil
	})
}

func (c *appointmentsCLI) list(args []string) error {
	from, to := c.timeFlag("from", "from (RFC 3339, default now)"), c.timeFlag("to", "to (RFC 3339, default from + 31 days)")
	cancelled := c.fs.Bool("cancelled", false, "include cancelled bookings")
	if err := c.fs.Parse(args); err != nil || c.fs.NArg() > 0 {
		return usageError{appointmentsHelp}
	}
	if from.IsZero() {
		*from = time.Now()
	}
	if to.IsZero() {
		*to = from.AddDate(0, 0, 31)
	}
	return c.withStore(func(store appointments.BookingStore) error {
		list, err := store.List(c.ctx, *from, *to, *cancelled)
		if err != nil {
			return cliError(err)
		}
		w := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
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
}

// cliError shows a coded error's message rather than its internals.
func cliError(err error) error {
	var e *tools.Error
	if errors.As(err, &e) && e.Code != tools.CodeInternal {
		return errors.New(e.Message)
	}
	return err
}
