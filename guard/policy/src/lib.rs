//! execguard policy engine (skeleton; being filled in).
#![cfg_attr(not(feature = "std"), no_std)]

pub mod profile;
pub use profile::Profile;
