//! Byte comparison and copying for the static musl build, which exports them as the C
//! library's `memcmp`, `bcmp`, `memcpy` and `memmove` (src/main.rs; docs/benchmarks.md,
//! "Issue 52: musl's string functions"). musl's `memcmp` compares a byte at a time (and its
//! `bcmp` calls it), and its x86_64 `memcpy` starts every copy, however small, with
//! `rep movsq`. Rust calls them for every slice comparison and every copy it does not inline:
//! paths, hashes, SQLite's keys and pages. glibc's builds never use this module.
//!
//! Comparisons take 16 bytes at a time (SSE2, which every x86_64 has) or 8 (elsewhere), the
//! last block overlapping the one before it. Copies up to 64 bytes load everything before
//! storing anything, which also makes them correct for overlapping buffers; longer ones go by
//! 32-byte blocks, and from 2 KiB on x86_64 by `rep movsb`. The loops hold an empty `asm!`
//! block so that the compiler never turns them back into a call to the function they are.

use std::ptr::{read_unaligned, write_unaligned};

/// Compares `n` bytes as `memcmp` does: negative, zero or positive as the first byte that
/// differs is smaller in `a`, absent, or smaller in `b`.
///
/// # Safety
/// `a` and `b` are valid for reads of `n` bytes.
pub unsafe fn compare(a: *const u8, b: *const u8, n: usize) -> i32 {
    // SAFETY: the caller's contract; each helper reads only within the first `n` bytes.
    unsafe {
        match first_difference(a, b, n) {
            Some(i) => i32::from(*a.add(i)) - i32::from(*b.add(i)),
            None => 0,
        }
    }
}

/// Whether `n` bytes are equal, as `bcmp` answers (zero when they are).
///
/// # Safety
/// `a` and `b` are valid for reads of `n` bytes.
pub unsafe fn differ(a: *const u8, b: *const u8, n: usize) -> bool {
    // SAFETY: the caller's contract.
    unsafe { first_difference(a, b, n).is_some() }
}

/// The index of the first byte that differs in the first `n`, if one does.
///
/// # Safety
/// `a` and `b` are valid for reads of `n` bytes.
#[inline(always)]
unsafe fn first_difference(a: *const u8, b: *const u8, n: usize) -> Option<usize> {
    // SAFETY: every read below starts at or after `a`/`b` and ends at or before `n` bytes on.
    unsafe {
        if n >= BLOCK {
            let mut i = 0;
            while i + BLOCK < n {
                if let Some(k) = block_difference(a.add(i), b.add(i)) {
                    return Some(i + k);
                }
                i += BLOCK;
                barrier();
            }
            // The last block ends at `n`, overlapping bytes already known equal.
            return block_difference(a.add(n - BLOCK), b.add(n - BLOCK)).map(|k| n - BLOCK + k);
        }
        if n >= 8 && BLOCK > 8 {
            if let Some(k) = word_difference(a, b) {
                return Some(k);
            }
            return word_difference(a.add(n - 8), b.add(n - 8)).map(|k| n - 8 + k);
        }
        // A plain loop: at `opt-level = "z"` an iterator's `find` stays a call per byte.
        let mut i = 0;
        while i < n {
            if *a.add(i) != *b.add(i) {
                return Some(i);
            }
            i += 1;
        }
        None
    }
}

/// The bytes a comparison takes at once.
#[cfg(target_arch = "x86_64")]
const BLOCK: usize = 16;
#[cfg(not(target_arch = "x86_64"))]
const BLOCK: usize = 8;

/// The first differing byte of two 16-byte blocks.
///
/// # Safety
/// Both are valid for reads of 16 bytes.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn block_difference(a: *const u8, b: *const u8) -> Option<usize> {
    use std::arch::x86_64::{__m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8};
    // SAFETY: unaligned 16-byte loads within the caller's bounds; SSE2 is part of x86_64.
    let equal = unsafe {
        _mm_movemask_epi8(_mm_cmpeq_epi8(
            _mm_loadu_si128(a.cast::<__m128i>()),
            _mm_loadu_si128(b.cast::<__m128i>()),
        ))
    };
    // One bit per byte, set where they are equal.
    let differ = !equal & 0xffff;
    (differ != 0).then(|| differ.trailing_zeros() as usize)
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
unsafe fn block_difference(a: *const u8, b: *const u8) -> Option<usize> {
    // SAFETY: the caller's contract (8 bytes each).
    unsafe { word_difference(a, b) }
}

/// The first differing byte of two 8-byte words.
///
/// # Safety
/// Both are valid for reads of 8 bytes.
#[inline(always)]
unsafe fn word_difference(a: *const u8, b: *const u8) -> Option<usize> {
    // SAFETY: unaligned 8-byte loads within the caller's bounds.
    let (x, y) = unsafe { (read_unaligned(a.cast::<u64>()), read_unaligned(b.cast::<u64>())) };
    // In memory order, whatever the machine's byte order: the first byte is the lowest.
    let differ = u64::from_le(x ^ y);
    (differ != 0).then(|| (differ.trailing_zeros() / 8) as usize)
}

/// Copies `n` bytes from `src` to `dst`, which may overlap, as `memmove` does.
///
/// # Safety
/// `src` is valid for reads and `dst` for writes of `n` bytes.
pub unsafe fn copy(dst: *mut u8, src: *const u8, n: usize) {
    // SAFETY: the caller's contract; each helper stays within the `n` bytes.
    unsafe {
        if n <= 64 {
            copy_small(dst, src, n);
        } else if (dst as usize).wrapping_sub(src as usize) >= n {
            // `dst` does not start inside `src`: a forward copy never reads what it wrote.
            copy_forward(dst, src, n);
        } else {
            copy_backward(dst, src, n);
        }
    }
}

/// Up to 64 bytes: every load before any store.
///
/// # Safety
/// As [`copy`], with `n <= 64`.
#[inline(always)]
unsafe fn copy_small(dst: *mut u8, src: *const u8, n: usize) {
    // SAFETY: the loads cover `src..src + n` (the pairs overlap), the stores the same of `dst`.
    unsafe {
        if n >= 32 {
            let (a, b) = (load32(src), load32(src.add(n - 32)));
            store32(dst, a);
            store32(dst.add(n - 32), b);
        } else if n >= 16 {
            let (a, b) = (load16(src), load16(src.add(n - 16)));
            store16(dst, a);
            store16(dst.add(n - 16), b);
        } else if n >= 8 {
            let (a, b) = (
                read_unaligned(src.cast::<u64>()),
                read_unaligned(src.add(n - 8).cast::<u64>()),
            );
            write_unaligned(dst.cast::<u64>(), a);
            write_unaligned(dst.add(n - 8).cast::<u64>(), b);
        } else if n >= 4 {
            let (a, b) = (
                read_unaligned(src.cast::<u32>()),
                read_unaligned(src.add(n - 4).cast::<u32>()),
            );
            write_unaligned(dst.cast::<u32>(), a);
            write_unaligned(dst.add(n - 4).cast::<u32>(), b);
        } else if n > 0 {
            let (a, b, c) = (*src, *src.add(n / 2), *src.add(n - 1));
            *dst = a;
            *dst.add(n / 2) = b;
            *dst.add(n - 1) = c;
        }
    }
}

/// More than 64 bytes, `dst` not inside `src`: 32-byte blocks from the start, the last 32
/// bytes loaded before anything is stored (they may overlap the block before them).
///
/// # Safety
/// As [`copy`], with `n > 64`.
unsafe fn copy_forward(dst: *mut u8, src: *const u8, n: usize) {
    // SAFETY: every access is within the first `n` bytes of `src` or `dst`.
    unsafe {
        #[cfg(target_arch = "x86_64")]
        if n >= 2048 && (src as usize).wrapping_sub(dst as usize) >= n {
            // Disjoint and large: the CPU's own string copy.
            std::arch::asm!(
                "rep movsb",
                inout("rcx") n => _,
                inout("rdi") dst => _,
                inout("rsi") src => _,
                options(nostack, preserves_flags)
            );
            return;
        }
        let tail = load32(src.add(n - 32));
        let mut i = 0;
        while i + 32 < n {
            let block = load32(src.add(i));
            store32(dst.add(i), block);
            i += 32;
            barrier();
        }
        store32(dst.add(n - 32), tail);
    }
}

/// More than 64 bytes, `dst` inside `src`: 32-byte blocks from the end, the first 32 bytes
/// loaded before anything is stored.
///
/// # Safety
/// As [`copy`], with `n > 64`.
unsafe fn copy_backward(dst: *mut u8, src: *const u8, n: usize) {
    // SAFETY: every access is within the first `n` bytes of `src` or `dst`.
    unsafe {
        let head = load32(src);
        let mut end = n;
        while end > 32 {
            let block = load32(src.add(end - 32));
            store32(dst.add(end - 32), block);
            end -= 32;
            barrier();
        }
        store32(dst, head);
    }
}

/// Sixteen bytes, as two words (the compiler makes one SSE2 load of them on x86_64).
type Pair = (u64, u64);

#[inline(always)]
unsafe fn load16(p: *const u8) -> Pair {
    // SAFETY: the caller's: 16 readable bytes.
    unsafe {
        (
            read_unaligned(p.cast::<u64>()),
            read_unaligned(p.add(8).cast::<u64>()),
        )
    }
}

#[inline(always)]
unsafe fn store16(p: *mut u8, v: Pair) {
    // SAFETY: the caller's: 16 writable bytes.
    unsafe {
        write_unaligned(p.cast::<u64>(), v.0);
        write_unaligned(p.add(8).cast::<u64>(), v.1);
    }
}

#[inline(always)]
unsafe fn load32(p: *const u8) -> (Pair, Pair) {
    // SAFETY: the caller's: 32 readable bytes.
    unsafe { (load16(p), load16(p.add(16))) }
}

#[inline(always)]
unsafe fn store32(p: *mut u8, v: (Pair, Pair)) {
    // SAFETY: the caller's: 32 writable bytes.
    unsafe {
        store16(p, v.0);
        store16(p.add(16), v.1);
    }
}

/// Keeps a loop a loop: the compiler may not replace one holding an `asm!` block it cannot
/// see into with a call to `memcpy` or `memcmp`, which here would be the loop itself.
#[inline(always)]
fn barrier() {
    // SAFETY: an empty instruction sequence; it reads and writes nothing.
    unsafe { std::arch::asm!("", options(nostack, preserves_flags)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(n: usize, seed: u8) -> Vec<u8> {
        (0..n)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect()
    }

    #[test]
    fn compare_agrees_with_slice_order_at_every_length_and_difference() {
        for n in 0..200 {
            let a = bytes(n + 3, 7);
            for offset in 0..3 {
                let x = &a[offset..offset + n];
                // SAFETY: both slices hold n bytes.
                assert_eq!(unsafe { compare(x.as_ptr(), x.as_ptr(), n) }, 0);
                for at in 0..n {
                    for delta in [1u8, 128, 255] {
                        let mut y = x.to_vec();
                        y[at] = y[at].wrapping_add(delta);
                        // SAFETY: both slices hold n bytes.
                        let (got, unequal) = unsafe {
                            (
                                compare(x.as_ptr(), y.as_ptr(), n),
                                differ(x.as_ptr(), y.as_ptr(), n),
                            )
                        };
                        let want = i32::from(x[at]) - i32::from(y[at]);
                        assert_eq!((got, unequal), (want, true), "n {n} at {at} delta {delta}");
                    }
                }
            }
        }
    }

    #[test]
    fn copy_is_memmove_for_every_length_and_overlap() {
        for n in 0..300 {
            for shift in [0usize, 1, 7, 16, 31, 32, 33, 64, 100] {
                let source = bytes(n + shift, 3);
                // Forward and backward overlap, and apart.
                for (from, to) in [(shift, 0), (0, shift)] {
                    let mut buf = bytes(n + shift, 3);
                    let want = {
                        let mut w = buf.clone();
                        w.copy_within(from..from + n, to);
                        w
                    };
                    let p = buf.as_mut_ptr();
                    // SAFETY: both ranges lie within buf's n + shift bytes.
                    unsafe { copy(p.add(to), p.add(from), n) };
                    assert_eq!(buf, want, "n {n} from {from} to {to}");
                }
                let mut apart = vec![0u8; n];
                // SAFETY: both hold at least n bytes and do not overlap.
                unsafe { copy(apart.as_mut_ptr(), source.as_ptr(), n) };
                assert_eq!(apart[..], source[..n], "n {n} apart");
            }
        }
        // Past the x86_64 string-copy threshold, apart and overlapping.
        let source = bytes(10_000, 9);
        let mut apart = vec![0u8; 10_000];
        // SAFETY: both hold 10,000 bytes and do not overlap.
        unsafe { copy(apart.as_mut_ptr(), source.as_ptr(), 10_000) };
        assert_eq!(apart, source);
        let mut buf = bytes(10_100, 9);
        let mut want = buf.clone();
        want.copy_within(100..10_100, 0);
        // SAFETY: both ranges lie within buf's 10,100 bytes.
        unsafe { copy(buf.as_mut_ptr(), buf.as_ptr().add(100), 10_000) };
        assert_eq!(buf, want);
    }
}
