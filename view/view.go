// Package view is skyloop's live web view: a page (embedded in the binary,
// three.js vendored from npm in static/vendor, MIT licence) that connects
// to the run's Foxglove WebSocket server on the same address and shows the
// vehicles in 3D with trails, the radio links heard in the last second
// coloured by their delivery ratio over the last two, packet flashes, the
// selected vehicle's telemetry, the network figures of the last five
// seconds and the events. skyloop run --serve serves it.
package view

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed static
var static embed.FS

// Pages returns the handler that serves the page and its scripts.
func Pages() http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.FileServer(http.FS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
