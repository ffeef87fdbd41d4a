//! Integration tests: they drive the real binaries.
