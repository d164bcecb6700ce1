//! `dlsym` and `dlvsym`: a program can ask libc for its own `execve` by address (`dlsym` on
//! libc's handle, `dlvsym` with a version), which no symbol interposition would catch. The
//! guard exports both. Names it does not replace go to libc's `dlsym` by a tail jump (the
//! trampolines in `shim.c`), so libc still sees the caller's return address, which `RTLD_NEXT`
//! and `RTLD_DEFAULT` depend on; names it replaces are looked up here, and libc's definition is
//! answered with the guard's.
//!
//! The guard's own `dlsym` would shadow libc's for the guard too, so libc's is found by reading
//! libc's dynamic symbol table (`dl_iterate_phdr`, then the GNU hash table), once per process.

use core::sync::atomic::{AtomicUsize, Ordering};
use execguard_os::c_bytes;
use libc::{c_char, c_int, c_void};

type DlsymFn = unsafe extern "C" fn(*mut c_void, *const c_char) -> *mut c_void;
type DlvsymFn = unsafe extern "C" fn(*mut c_void, *const c_char, *const c_char) -> *mut c_void;

/// Every libc function the guard replaces. The guard's own definitions are found in its own
/// dynamic symbol table (taking their addresses in code would make the loader bind each of
/// them in every process at load).
const REPLACED: [&[u8]; 24] = [
    b"execve",
    b"execv",
    b"execvp",
    b"execvpe",
    b"execveat",
    b"fexecve",
    b"execl",
    b"execle",
    b"execlp",
    b"syscall",
    b"posix_spawn",
    b"posix_spawnp",
    b"system",
    b"__libc_system",
    b"popen",
    b"_IO_popen",
    b"wordexp",
    b"memfd_create",
    b"dlopen",
    b"dlmopen",
    b"iconv_open",
    b"fork",
    b"dlsym",
    b"dlvsym",
];

fn replaced(name: &[u8]) -> bool {
    REPLACED.contains(&name)
}

/// The guard's definition of a replaced name.
fn replacement(name: &[u8]) -> Option<usize> {
    if !replaced(name) {
        return None;
    }
    let libc = libc()?;
    // SAFETY: the guard's own tables, found by dl_iterate_phdr; the library stays loaded.
    let table = unsafe { Symbols::new(libc.self_base, libc.self_dynamic as *const Dyn) }?;
    // SAFETY: as above.
    unsafe { table.lookup(name) }
}

/// libc's `dlsym` and `dlvsym`, the address range of the object that defines them, and where
/// the guard's own symbol table is.
#[derive(Default)]
struct Libc {
    dlsym: usize,
    dlvsym: usize,
    start: usize,
    end: usize,
    self_base: usize,
    self_dynamic: usize,
}

// In .data rather than .bss (see hooks.rs).
#[link_section = ".data"]
static LIBC: [AtomicUsize; 6] = [
    AtomicUsize::new(0),
    AtomicUsize::new(0),
    AtomicUsize::new(0),
    AtomicUsize::new(0),
    AtomicUsize::new(0),
    AtomicUsize::new(0),
];

fn libc() -> Option<Libc> {
    let load = |i: usize| LIBC[i].load(Ordering::Acquire);
    if load(0) == 0 {
        let found = find_libc()?;
        // Racing threads store the same values; `dlsym` last, as the "ready" mark.
        for (i, v) in [
            found.dlvsym,
            found.start,
            found.end,
            found.self_base,
            found.self_dynamic,
        ]
        .into_iter()
        .enumerate()
        {
            LIBC[i + 1].store(v, Ordering::Release);
        }
        LIBC[0].store(found.dlsym, Ordering::Release);
    }
    Some(Libc {
        dlsym: load(0),
        dlvsym: load(1),
        start: load(2),
        end: load(3),
        self_base: load(4),
        self_dynamic: load(5),
    })
}

/// libc's `dlsym`, for the guard's own `RTLD_NEXT` lookups.
pub fn real_dlsym() -> Option<DlsymFn> {
    let libc = libc()?;
    // SAFETY: the address of libc's `dlsym`, whose type this is.
    Some(unsafe { core::mem::transmute::<usize, DlsymFn>(libc.dlsym) })
}

/// Where the trampoline jumps: libc's function for names the guard does not replace, the
/// guard's lookup for the rest (`versioned`: `dlvsym` rather than `dlsym`).
#[no_mangle]
pub unsafe extern "C" fn __execguard_dlsym_route(name: *const c_char, versioned: c_int) -> usize {
    // SAFETY: dlsym's contract: NULL or a C string.
    let name = unsafe { c_bytes(name) };
    if replaced(name) {
        return if versioned != 0 {
            replaced_dlvsym as *const () as usize
        } else {
            replaced_dlsym as *const () as usize
        };
    }
    match libc() {
        Some(libc) if versioned != 0 => libc.dlvsym,
        Some(libc) => libc.dlsym,
        None => not_found as *const () as usize,
    }
}

unsafe extern "C" fn not_found(_: *mut c_void, _: *const c_char) -> *mut c_void {
    core::ptr::null_mut()
}

/// The guard's answer for a replaced name: its own function where libc's would be found.
/// `RTLD_NEXT` asks for the definition after the caller, which for these names is the guard's
/// (or, for a caller after the guard, libc's, which the guard's stands in for).
fn answer(libc: &Libc, handle: *mut c_void, name: &[u8], found: impl FnOnce() -> usize) -> usize {
    let Some(ours) = replacement(name) else {
        return found();
    };
    if handle == libc::RTLD_NEXT {
        return ours;
    }
    match found() {
        0 => 0,
        f if (libc.start..libc.end).contains(&f) => ours,
        f => f,
    }
}

unsafe extern "C" fn replaced_dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void {
    let Some(libc) = libc() else {
        return core::ptr::null_mut();
    };
    // SAFETY: dlsym's contract: a C string.
    let bytes = unsafe { c_bytes(name) };
    answer(&libc, handle, bytes, || {
        // SAFETY: libc's dlsym with the caller's arguments.
        let real = unsafe { core::mem::transmute::<usize, DlsymFn>(libc.dlsym) };
        // SAFETY: forwarded as the caller made it.
        unsafe { real(handle, name) as usize }
    }) as *mut c_void
}

unsafe extern "C" fn replaced_dlvsym(
    handle: *mut c_void,
    name: *const c_char,
    version: *const c_char,
) -> *mut c_void {
    let Some(libc) = libc() else {
        return core::ptr::null_mut();
    };
    // SAFETY: dlvsym's contract: a C string.
    let bytes = unsafe { c_bytes(name) };
    answer(&libc, handle, bytes, || {
        // SAFETY: libc's dlvsym with the caller's arguments.
        let real = unsafe { core::mem::transmute::<usize, DlvsymFn>(libc.dlvsym) };
        // SAFETY: forwarded as the caller made it.
        unsafe { real(handle, name, version) as usize }
    }) as *mut c_void
}

/// Walks the loaded objects in load order (the order of the global scope): the first one
/// other than the guard that defines `dlsym` is libc, and the guard's own is noted on the way.
fn find_libc() -> Option<Libc> {
    let mut found = Libc::default();
    // SAFETY: the callback only reads the program headers and dynamic sections the loader
    // hands it, which stay mapped during the call.
    unsafe { libc::dl_iterate_phdr(Some(visit), (&mut found as *mut Libc).cast::<c_void>()) };
    (found.dlsym != 0 && found.self_dynamic != 0).then_some(found)
}

unsafe extern "C" fn visit(info: *mut libc::dl_phdr_info, _: usize, data: *mut c_void) -> c_int {
    // SAFETY: dl_iterate_phdr passes a valid info and our `data`.
    let (info, found) = unsafe { (&*info, &mut *data.cast::<Libc>()) };
    let base = info.dlpi_addr as usize;
    // SAFETY: dlpi_phdr points at dlpi_phnum program headers.
    let phdrs = unsafe { core::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
    let (mut start, mut end, mut dynamic) = (usize::MAX, 0, None);
    for ph in phdrs {
        let at = base.wrapping_add(ph.p_vaddr as usize);
        match ph.p_type {
            libc::PT_LOAD => {
                start = start.min(at);
                end = end.max(at + ph.p_memsz as usize);
            }
            libc::PT_DYNAMIC => dynamic = Some(at as *const Dyn),
            _ => {}
        }
    }
    let Some(dynamic) = dynamic else { return 0 };
    let me = visit as *const () as usize;
    if (start..end).contains(&me) {
        (found.self_base, found.self_dynamic) = (base, dynamic as usize);
        return 0;
    }
    if found.dlsym != 0 {
        return i32::from(found.self_dynamic != 0);
    }
    // SAFETY: `dynamic` is this loaded object's dynamic section.
    let Some(table) = (unsafe { Symbols::new(base, dynamic) }) else {
        return 0;
    };
    // SAFETY: the tables belong to a loaded object and stay mapped.
    let pair = unsafe { (table.lookup(b"dlsym"), table.lookup(b"dlvsym")) };
    if let (Some(dlsym), Some(dlvsym)) = pair {
        (found.dlsym, found.dlvsym, found.start, found.end) = (dlsym, dlvsym, start, end);
    }
    i32::from(found.dlsym != 0 && found.self_dynamic != 0)
}

#[repr(C)]
struct Dyn {
    tag: i64,
    val: u64,
}

#[repr(C)]
struct Sym {
    name: u32,
    info: u8,
    other: u8,
    shndx: u16,
    value: u64,
    size: u64,
}

const DT_NULL: i64 = 0;
const DT_STRTAB: i64 = 5;
const DT_SYMTAB: i64 = 6;
const DT_GNU_HASH: i64 = 0x6fff_fef5;
const DT_VERSYM: i64 = 0x6fff_fff0;
const STT_FUNC: u8 = 2;

/// One object's dynamic symbol table, found through its GNU hash table.
struct Symbols {
    base: usize,
    strtab: *const u8,
    symtab: *const Sym,
    gnu_hash: *const u32,
    versym: *const u16,
}

impl Symbols {
    /// # Safety
    /// `dynamic` is the mapped dynamic section of an object loaded at `base`.
    unsafe fn new(base: usize, dynamic: *const Dyn) -> Option<Self> {
        let (mut strtab, mut symtab, mut gnu_hash, mut versym) = (0, 0, 0, 0);
        let mut d = dynamic;
        loop {
            // SAFETY: the dynamic section ends with DT_NULL.
            let (tag, val) = unsafe { ((*d).tag, (*d).val as usize) };
            match tag {
                DT_NULL => break,
                DT_STRTAB => strtab = val,
                DT_SYMTAB => symtab = val,
                DT_GNU_HASH => gnu_hash = val,
                DT_VERSYM => versym = val,
                _ => {}
            }
            // SAFETY: not yet at DT_NULL, so the next entry exists.
            d = unsafe { d.add(1) };
        }
        // glibc relocates these entries in place where the dynamic section is writable, and
        // leaves them relative where it is not: relative addresses lie below the load address.
        let at = |v: usize| if v != 0 && v < base { base + v } else { v };
        if strtab == 0 || symtab == 0 || gnu_hash == 0 {
            return None;
        }
        Some(Symbols {
            base,
            strtab: at(strtab) as *const u8,
            symtab: at(symtab) as *const Sym,
            gnu_hash: at(gnu_hash) as *const u32,
            versym: if versym == 0 {
                core::ptr::null()
            } else {
                at(versym) as *const u16
            },
        })
    }

    /// The address of function `name`'s default version (the one `dlsym` returns).
    ///
    /// # Safety
    /// The tables are this object's, mapped.
    unsafe fn lookup(&self, name: &[u8]) -> Option<usize> {
        let hash = name.iter().fold(5381u32, |h, &c| {
            h.wrapping_mul(33).wrapping_add(u32::from(c))
        });
        // SAFETY: reads inside the GNU hash table's documented layout: nbuckets, symoffset,
        // bloom_size, bloom_shift, bloom[bloom_size] (words), buckets, chains.
        unsafe {
            let h = self.gnu_hash;
            let (nbuckets, symoffset, bloom_size) = (*h, *h.add(1), *h.add(2));
            if nbuckets == 0 {
                return None;
            }
            let words = core::mem::size_of::<usize>() / 4;
            let buckets = h.add(4 + bloom_size as usize * words);
            let chains = buckets.add(nbuckets as usize);
            let mut i = *buckets.add((hash % nbuckets) as usize);
            if i < symoffset {
                return None;
            }
            loop {
                let chain = *chains.add((i - symoffset) as usize);
                if chain | 1 == hash | 1 && self.is(i, name) {
                    return Some(self.base + (*self.symtab.add(i as usize)).value as usize);
                }
                if chain & 1 != 0 {
                    return None;
                }
                i += 1;
            }
        }
    }

    /// Is symbol `i` a defined function named `name`, in its default version?
    ///
    /// # Safety
    /// As [`Symbols::lookup`].
    unsafe fn is(&self, i: u32, name: &[u8]) -> bool {
        // SAFETY: `i` came from the hash chain, so it indexes the symbol table; its name is a
        // NUL-terminated string in the string table.
        unsafe {
            let sym = &*self.symtab.add(i as usize);
            let kind = sym.info & 0xf;
            if sym.shndx == 0 || kind != STT_FUNC {
                return false;
            }
            if !self.versym.is_null() && *self.versym.add(i as usize) & 0x8000 != 0 {
                return false; // a hidden (non-default) version
            }
            c_bytes(self.strtab.add(sym.name as usize).cast()) == name
        }
    }
}
