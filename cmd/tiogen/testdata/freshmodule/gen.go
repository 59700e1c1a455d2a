// Package chatapp is a user's package with the Go API of a contract,
// generated as the README says.
package chatapp

//go:generate go tool tiogen gen --go . chat.tio
