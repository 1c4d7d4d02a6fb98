package fields

import (
	"strings"
	"testing"
)

func TestErrors(t *testing.T) {
	var none Errors
	if none.Err("x") != nil || (Errors{}).Err("x") != nil {
		t.Fatal("no problem gave an error")
	}
	e := Errors{"rate": "must be > 0, got 0", "loss": "must be in [0, 1], got 3"}
	if got, want := e.Err("impair").Error(), "impair: loss: must be in [0, 1], got 3; impair: rate: must be > 0, got 0"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	var lines []string
	e.Report("network", func(path, format string, args ...any) {
		lines = append(lines, path+" "+strings.ReplaceAll(format, "%s", args[0].(string)))
	})
	if got := strings.Join(lines, "|"); got != "network.loss must be in [0, 1], got 3|network.rate must be > 0, got 0" {
		t.Errorf("Report: %q", got)
	}
	e.Report("", func(path, format string, args ...any) {
		if strings.HasPrefix(path, ".") {
			t.Errorf("path %q with an empty base", path)
		}
	})
}
