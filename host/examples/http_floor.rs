//! The transport floor of the MCP benchmarks (`bench/vs-wassette.sh`,
//! `bench/mcp.sh`): an HTTP/1.1 server built the way the hub's listener is
//! (tokio's multi-thread runtime, hyper's http1 with keep-alive, `TCP_NODELAY`, the
//! hub's allocator) that reads each request's body and answers with fixed bytes,
//! doing nothing else. What one call costs here is what wrk, the kernel's loopback
//! and hyper cost before any server does any work: no server speaking MCP over
//! HTTP/1.1 on this machine can answer faster.
//!   usage: http_floor ADDRESS ANSWER_FILE
//! ANSWER_FILE holds the body to answer (the benchmarks save the hub's own answer to
//! their call there), sent as `application/json`.

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use tokio::net::TcpListener;
use wasmtime_wasi_http::io::TokioIo;

// The hub's allocator, so that the floor allocates as the hub does.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(address), Some(answer_file), None) = (args.next(), args.next(), args.next()) else {
        eprintln!("usage: http_floor ADDRESS ANSWER_FILE");
        std::process::exit(2);
    };
    let answer = match std::fs::read(&answer_file) {
        Ok(bytes) => Bytes::from(bytes),
        Err(e) => {
            eprintln!("http_floor: cannot read the answer {answer_file}: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = serve(&address, answer) {
        eprintln!("http_floor: cannot serve on {address}: {e}");
        std::process::exit(1);
    }
}

fn serve(address: &str, answer: Bytes) -> std::io::Result<()> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(async {
            let listener = TcpListener::bind(address).await?;
            loop {
                let (stream, _) = listener.accept().await?;
                stream.set_nodelay(true)?;
                let answer = answer.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |request| respond(request, answer.clone()));
                    let mut connection = http1::Builder::new();
                    connection.keep_alive(true);
                    let _ = connection.serve_connection(TokioIo::new(stream), service).await;
                });
            }
        })
}

/// Reads the whole request body (as the hub does before it parses it), then
/// answers `answer`.
async fn respond(request: Request<Incoming>, answer: Bytes) -> Result<Response<Full<Bytes>>, hyper::Error> {
    request.into_body().collect().await?;
    let mut response = Response::new(Full::new(answer));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(response)
}
