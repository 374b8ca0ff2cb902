//! Transformer throughput (`cargo bench -p wasmhub --bench transform`): the recorded
//! provider streams as SSE bytes, parsed, transformed into UI chunks and encoded as
//! SSE again, on one thread. A plain timing loop reports the median of several
//! samples in upstream chunks per second (the goal is >= 1,000,000).
//!
//! Rates are per second of this thread's CPU time (from
//! `/proc/thread-self/schedstat`, in nanoseconds), which is "chunks/s on one core"
//! even on a shared machine where wall time includes waiting for a core; the wall
//! clock rate is printed beside it.
//!
//! Heap allocations are counted by a wrapper around the system allocator (one
//! relaxed atomic add each) and printed per upstream chunk.
//!
//! The last line, `RESULT transform_chunks_per_sec=<n>`, is what
//! `bench/llm.sh` reads.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use wasmhub::llm::{StepOptions, StepTransformer, UiChunk};
use wasmhub::sse;

const SAMPLES: usize = 15;
const SAMPLE_TIME: Duration = Duration::from_millis(200);
/// Reads arrive in pieces of this size, as from a socket.
const READ: usize = 16 * 1024;

/// The system allocator, counting allocations (reallocations included: each may
/// move the block).
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

struct Stream {
    name: String,
    sse: Vec<u8>,
    chunks: usize,
}

fn load() -> Vec<Stream> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/openai-streams");
    let mut streams: Vec<Stream> = std::fs::read_dir(&dir)
        .expect("fixtures")
        .filter_map(|e| {
            let path = e.ok()?.path();
            let name = path
                .file_name()?
                .to_str()?
                .strip_suffix(".chunks.txt")?
                .to_string();
            let text = std::fs::read_to_string(&path).ok()?;
            let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
            let mut sse = Vec::new();
            for line in &lines {
                sse::write_event(&mut sse, None, None, line);
            }
            sse.extend_from_slice(sse::DONE);
            Some(Stream {
                name,
                sse,
                chunks: lines.len(),
            })
        })
        .collect();
    streams.sort_by(|a, b| a.name.cmp(&b.name));
    streams
}

/// Parse + transform + encode one stream; returns the encoded bytes (so the work
/// cannot be optimized away).
fn run(stream: &Stream, out: &mut Vec<UiChunk>, wire: &mut Vec<u8>) -> usize {
    let mut parser = sse::Parser::new(16 << 20);
    let opts = StepOptions {
        tool_id_prefix: "call".into(),
        ..StepOptions::default()
    };
    let mut t = StepTransformer::new(opts);
    let mut total = 0;
    let mut encode = |out: &mut Vec<UiChunk>, wire: &mut Vec<u8>| {
        for c in out.drain(..) {
            c.write_sse(wire);
        }
        total += wire.len();
        wire.clear();
    };
    for piece in stream.sse.chunks(READ) {
        parser
            .feed(piece, &mut |e| {
                t.feed_data(e.data, out);
            })
            .expect("fixtures parse");
        encode(out, wire);
    }
    parser
        .finish(&mut |e| t.feed_data(e.data, out))
        .expect("fixtures parse");
    let summary = t.finish(out);
    encode(out, wire);
    std::hint::black_box(summary);
    total
}

/// CPU time this thread has used, in seconds.
fn cpu_time() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").expect("Linux schedstat");
    let ns: u64 = stat
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .expect("schedstat format");
    ns as f64 / 1e9
}

/// Median chunks per CPU second (and per wall second) of `streams` over
/// [`SAMPLES`] samples, with the slowest and fastest CPU rate.
fn measure(streams: &[&Stream]) -> (f64, f64, f64, f64) {
    let per_pass: usize = streams.iter().map(|s| s.chunks).sum();
    let (mut out, mut wire) = (Vec::new(), Vec::new());
    let (mut rates, mut wall_rates) = (Vec::with_capacity(SAMPLES), Vec::with_capacity(SAMPLES));
    for _ in 0..SAMPLES {
        let (start, cpu_start) = (Instant::now(), cpu_time());
        let mut chunks = 0usize;
        while start.elapsed() < SAMPLE_TIME {
            for s in streams {
                std::hint::black_box(run(s, &mut out, &mut wire));
            }
            chunks += per_pass;
        }
        rates.push(chunks as f64 / (cpu_time() - cpu_start));
        wall_rates.push(chunks as f64 / start.elapsed().as_secs_f64());
    }
    rates.sort_by(|a, b| a.partial_cmp(b).unwrap());
    wall_rates.sort_by(|a, b| a.partial_cmp(b).unwrap());
    (
        rates[SAMPLES / 2],
        rates[0],
        rates[SAMPLES - 1],
        wall_rates[SAMPLES / 2],
    )
}

fn main() {
    let streams = load();
    assert!(!streams.is_empty(), "no recorded streams found");
    // Warm-up: caches, allocator, branch predictors.
    measure(&streams.iter().collect::<Vec<_>>());
    println!("parse + transform + encode, one thread, median of {SAMPLES} samples of {SAMPLE_TIME:?}");
    println!(
        "  {:<40} {:>6}  {:>14}  {:>14}",
        "stream", "chunks", "chunks/cpu-s", "chunks/wall-s"
    );
    for s in &streams {
        let (median, _, _, wall) = measure(&[s]);
        println!(
            "  {:<40} {:>6}  {:>14.0}  {:>14.0}",
            s.name, s.chunks, median, wall
        );
    }
    let all: Vec<&Stream> = streams.iter().collect();
    let total: usize = streams.iter().map(|s| s.chunks).sum();
    // The second pass reuses the buffers the first one grew: what it allocates is
    // per stream or per chunk.
    let (mut out, mut wire) = (Vec::new(), Vec::new());
    let mut before = 0;
    for pass in 0..2 {
        before = ALLOCATIONS.load(Ordering::Relaxed);
        for s in &all {
            std::hint::black_box(run(s, &mut out, &mut wire));
        }
        std::hint::black_box(pass);
    }
    let per_chunk = (ALLOCATIONS.load(Ordering::Relaxed) - before) as f64 / total as f64;
    let (median, min, max, wall) = measure(&all);
    println!(
        "  {:<40} {:>6}  {:>14.0}  {:>14.0}   (cpu-s min {min:.0}, max {max:.0})",
        "all streams", total, median, wall
    );
    println!("heap allocations per upstream chunk (one pass, all streams): {per_chunk:.2}");
    println!("RESULT transform_chunks_per_sec={median:.0}");
}
