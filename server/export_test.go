package server

import "github.com/sitetools/sitetools/server/web"

// WidgetFile is a file of the widget bundle, for the contract test.
type WidgetFile struct {
	Name      string
	Body      []byte
	Immutable bool
}

// WidgetFiles are the files the service bundles from web/widget.
func WidgetFiles() ([]WidgetFile, error) {
	b, err := web.WidgetFiles()
	if err != nil {
		return nil, err
	}
	out := make([]WidgetFile, 0, len(b))
	for _, f := range b {
		out = append(out, WidgetFile{Name: f.Name, Body: f.Body, Immutable: f.Immutable})
	}
	return out, nil
}
