// Package appointments turns an opening-hours schedule and busy time into free appointment
// slots, and nothing that could reveal what the busy time is.
package appointments
