//! The libc names of the shim's entry points (`shim.c`): the variadic ones, which stable Rust
//! cannot define, and the `dlsym` trampolines, which must reach libc with the caller's return
//! address. Each is one jump, so arguments, stack and return address reach the shim as the
//! caller left them. Defined here, they are on rustc's own export list: the library needs no
//! version script of its own, which GNU ld refuses beside rustc's (lld merges the two), and so
//! links with the system linker too (aarch64, or any build not linked by rust-lld).

macro_rules! exported_jumps {
    ($($name:ident => $shim:ident),* $(,)?) => {
        extern "C" {
            $(fn $shim();)*
        }
        $(
            /// Exported under libc's name; jumps to the shim's definition (`shim.c`).
            ///
            /// # Safety
            /// That of the libc function of the same name.
            #[unsafe(naked)]
            #[no_mangle]
            pub unsafe extern "C" fn $name() {
                #[cfg(target_arch = "x86_64")]
                core::arch::naked_asm!("jmp {}", sym $shim);
                #[cfg(target_arch = "aarch64")]
                core::arch::naked_asm!("b {}", sym $shim);
            }
        )*
    };
}

exported_jumps! {
    execl => __execguard_execl,
    execle => __execguard_execle,
    execlp => __execguard_execlp,
    syscall => __execguard_syscall_entry,
    dlsym => __execguard_dlsym,
    dlvsym => __execguard_dlvsym,
}
