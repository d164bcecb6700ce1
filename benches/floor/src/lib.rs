//! The Rust floor: an empty `#![no_std]` cdylib that exports nothing.
//!
//! Preloading it measures what a `no_std` Rust preload library costs before it
//! does any work: the loader maps, relocates and initialises one more object
//! that needs only libc. The exec guard is built the same way, so the distance
//! between this floor and the guard is the guard's own work.
//!
//! The harness compiles this file with `rustc` directly (same flags as the
//! workspace release profile: `-C opt-level=3 -C lto -C codegen-units=1
//! -C panic=abort`), so it needs no Cargo workspace entry to be measured.
#![cfg_attr(not(test), no_std)]

#[cfg(not(test))]
#[panic_handler]
fn panic(_info: &core::panic::PanicInfo<'_>) -> ! {
    loop {}
}
