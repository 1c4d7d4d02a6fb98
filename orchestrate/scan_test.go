package orchestrate_test

import "fmt"

func fmtSscan(s string, sent, replies, echoed *int) (int, error) {
	return fmt.Sscanf(s, "sent %d replies %d echoed %d", sent, replies, echoed)
}
