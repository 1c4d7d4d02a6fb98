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
	"encoding/json"
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

// Pacer is what the page's pause and speed buttons drive in a real-time
// run (runner.PaceControl).
type Pacer interface {
	Pause(on bool)
	SetFactor(f float64) error
	State() (paused bool, factor float64)
}

// LivePages serves the page and, for a real-time run paced at realtime,
// /control: GET returns {"realtime", "paused", "factor"}; POST takes
// {"pause": bool} or {"factor": number}. Without a pacer /control is 404
// and the page shows no buttons.
func LivePages(p Pacer, realtime float64) http.Handler {
	pages := Pages()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/control" {
			pages.ServeHTTP(w, r)
			return
		}
		if p == nil || realtime <= 0 {
			http.NotFound(w, r)
			return
		}
		if r.Method == http.MethodPost {
			var req struct {
				Pause  *bool    `json:"pause"`
				Factor *float64 `json:"factor"`
			}
			if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<10)).Decode(&req); err != nil {
				http.Error(w, "bad control request: "+err.Error(), http.StatusBadRequest)
				return
			}
			if req.Factor != nil {
				if err := p.SetFactor(*req.Factor); err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
			}
			if req.Pause != nil {
				p.Pause(*req.Pause)
			}
		}
		paused, factor := p.State()
		if factor == 0 {
			factor = realtime
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"realtime": realtime, "paused": paused, "factor": factor})
	})
}
