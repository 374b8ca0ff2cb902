//! Where a plugin's compiled code lives, and giving back the pages its load touched.
//!
//! A plugin compiled through the cache is mapped from the cache's file
//! (`Component::deserialize_file`): its pages are the page cache's, mapped into the
//! hub as they are first executed or read. Loading runs the plugin (its listing and
//! its examples), which maps a large part of a big plugin (a Python or JavaScript
//! interpreter: 10-20 MB each) and would keep it in the hub's resident memory for as
//! long as the plugin is loaded, called or not. Once the load is over, those pages
//! are dropped from the hub's page tables: a later call maps what it uses again from
//! the page cache (minor faults, the first call only), so an idle plugin costs no
//! resident memory for its code. Code compiled without the cache lives in the hub's
//! own memory and is left alone.

use std::ops::Range;
use wasmtime::component::Component;

/// A component's compiled code, and whether it is mapped from a file.
#[derive(Debug)]
pub(super) enum CodePages {
    /// Mapped from the compiled cache's file: its pages can be released.
    Mapped(Range<usize>),
    /// In the hub's own memory (compiled without a cache): nothing to release.
    InMemory,
}

impl CodePages {
    /// The code of `component`, which `Component::deserialize_file` mapped.
    pub(super) fn mapped(component: &Component) -> CodePages {
        let image = component.image_range();
        CodePages::Mapped(image.start as usize..image.end as usize)
    }

    /// Drops the code's pages from the hub's page tables (not from the page cache).
    /// Returns how many bytes of address space were released, 0 for code in memory.
    pub(super) fn release(&self) -> usize {
        let CodePages::Mapped(range) = self else { return 0 };
        let len = range.end - range.start;
        // SAFETY: the range is exactly the private file mapping wasmtime made of the
        // cache file, alive while the component is (the caller holds it). wasmtime
        // never writes to that mapping: it refuses artifacts with relocations
        // outside `.debug_*` sections and makes the image read-only/executable when
        // it publishes it, before any code runs. So every page equals the file, and
        // MADV_DONTNEED only unmaps it; the next access maps it again from the page
        // cache. (Were a page ever written, DONTNEED would revert it to the file:
        // re-check this on a wasmtime upgrade; `tests` calls a released plugin.)
        let result = unsafe { libc::madvise(range.start as *mut libc::c_void, len, libc::MADV_DONTNEED) };
        if result != 0 {
            crate::debug!(
                "plugin code: cannot release pages: {}",
                std::io::Error::last_os_error()
            );
            return 0;
        }
        len
    }
}
