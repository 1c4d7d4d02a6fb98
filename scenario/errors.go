package scenario

import "skyloop/fileerr"

// Error is one problem in a scenario file, located by line and field path
// (fileerr.Error).
type Error = fileerr.Error

// Errors is every problem found in a scenario, in file order
// (fileerr.Errors).
type Errors = fileerr.Errors
