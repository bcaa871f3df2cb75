package manager

// StartManager is startManager for the tests of package manager_test: it
// runs a Manager's Start in a goroutine until the returned stop (or the
// test's end).
var StartManager = startManager
