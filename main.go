// Command sitetools serves a website's tool registry to every agent that wants it.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	_ "time/tzdata" // IANA time zones even in a scratch or distroless image

	"github.com/sitetools/sitetools/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sitetools:", err)
		os.Exit(cli.ExitCode(err))
	}
}
