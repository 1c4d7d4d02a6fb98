// Package view is skyloop's live web view: a page (embedded in the binary,
// three.js vendored from npm in static/vendor, MIT licence) that connects
// to the run's Foxglove WebSocket server on the same address and shows the
// vehicles in 3D with trails, the radio links heard in the last second
// coloured by their delivery ratio over the last two, packet flashes, the
// selected vehicle's telemetry, the network figures of the last five
// seconds and the events. skyloop run --serve serves it.
package view

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"

	"skyloop/internal/webguard"
)

//go:embed static
var static embed.FS

// Pages returns the handler that serves the page and its scripts (GET and
// HEAD only), every response with webguard's security headers: a
// Content-Security-Policy that allows no inline script or style, nosniff,
// no framing. The server it is mounted on checks the Host header
// (webguard.Hosts).
func Pages() http.Handler {
	sub, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.FileServer(http.FS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		webguard.SetHeaders(w.Header())
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, r.Method+" is not allowed here", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}

// Pacer is what the page's pause and speed buttons drive in a real-time
// run (runner.PaceControl). SetFactor refuses a factor out of its range.
type Pacer interface {
	Pause(on bool)
	SetFactor(f float64) error
	State() (paused bool, factor float64)
	// Speed returns the run's measured pace: simulated seconds per wall
	// second lately, 0 when not measured yet.
	Speed() float64
}

// LivePages serves the page and, for a real-time run paced at realtime,
// /control: GET returns {"realtime", "paused", "factor", "speed"} (speed:
// the pace the run measures itself, 0 before it has); POST takes
// {"pause": bool} and/or {"factor": number} as application/json from the
// page itself (webguard.CheckChange: another site's page gets 403, a body
// of another type 415), a factor the pacer refuses or an unknown field
// 400. Without a pacer /control is 404 and the page shows no buttons.
func LivePages(p Pacer, realtime float64) http.Handler {
	pages := Pages()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/control" {
			pages.ServeHTTP(w, r)
			return
		}
		webguard.SetHeaders(w.Header())
		if p == nil || realtime <= 0 {
			http.NotFound(w, r)
			return
		}
		switch r.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodPost:
			if err := webguard.CheckChange(r); err != nil {
				webguard.WriteChangeError(w, err)
				return
			}
			var req struct {
				Pause  *bool    `json:"pause"`
				Factor *float64 `json:"factor"`
			}
			dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<10))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&req); err != nil {
				http.Error(w, "bad control request: want {\"pause\": true|false} or {\"factor\": number}: "+err.Error(), http.StatusBadRequest)
				return
			}
			if dec.More() {
				http.Error(w, "bad control request: one JSON object only", http.StatusBadRequest)
				return
			}
			if req.Factor != nil {
				if err := p.SetFactor(*req.Factor); err != nil {
					http.Error(w, "bad control request: "+err.Error(), http.StatusBadRequest)
					return
				}
			}
			if req.Pause != nil {
				p.Pause(*req.Pause)
			}
		default:
			w.Header().Set("Allow", "GET, HEAD, POST")
			http.Error(w, r.Method+" is not allowed on /control", http.StatusMethodNotAllowed)
			return
		}
		paused, factor := p.State()
		if factor == 0 {
			factor = realtime
		}
		var b bytes.Buffer
		if err := json.NewEncoder(&b).Encode(map[string]any{"realtime": realtime, "paused": paused, "factor": factor, "speed": p.Speed()}); err != nil {
			http.Error(w, fmt.Sprintf("control state: %v", err), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(b.Bytes())
	})
}
