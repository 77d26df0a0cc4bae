//! Integration tests, one target: each module covers one area.

mod cli;
mod layout_cases;
mod property;
mod read;
mod repair;
mod roundtrip;
mod safety;
