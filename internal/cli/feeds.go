package cli

import (
	"errors"

	"github.com/sitetools/sitetools/tools/appointments"
)

// newICSFeeds returns the busy-time calendar feeds.
func newICSFeeds(urls []string) (appointments.BusySource, error) {
	return nil, errors.New("calendar feeds are not supported by this build yet")
}
