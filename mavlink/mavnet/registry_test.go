package mavnet_test

import "skyloop/components"

// registry has every component skyloop ships with.
var registry = components.Registry()
