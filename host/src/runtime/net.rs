//! Outbound HTTP policy: the only network a plugin gets is wasi:http, and every
//! request passes [`NetHooks::send_request`], which
//!
//! 1. denies any host (and port) the plugin's manifest does not grant, before any
//!    DNS or socket work (`HTTP request denied`);
//! 2. resolves the host itself and drops private, loopback, link-local,
//!    unique-local, ... addresses unless the grant is that IP literal
//!    (`destination IP prohibited`);
//! 3. connects to an address it checked, so a second DNS answer cannot rebind the
//!    request to an internal address (wasi-http's `default_send_request` would
//!    resolve again), and clamps every timeout to the call's deadline.
//!
//! A plugin that imports wasi:http without a grant is linked and loads; each of its
//! requests is denied with `HTTP request denied` and a log line naming the host.
//! Raw sockets are never granted (see `sandbox.rs`).

use super::manifest::HostGrant;
use bytes::Bytes;
use http::uri::Scheme;
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::{Instant, Sleep};
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::{Error as HttpError, RequestOptions, WasiBody, WasiHttpHooks};

/// The hosts one plugin may reach.
#[derive(Debug, Default)]
pub struct NetPolicy {
    grants: Vec<HostGrant>,
}

impl NetPolicy {
    pub fn new(grants: Vec<HostGrant>) -> NetPolicy {
        NetPolicy { grants }
    }

    /// The grant covering `host:port` (host lowercase, without brackets); a grant
    /// without a port covers only the scheme's default port.
    pub fn grant_for(&self, host: &str, port: u16, default_port: u16) -> Option<&HostGrant> {
        let ip = host.parse::<IpAddr>().ok();
        self.grants.iter().find(|g| {
            let same_host = match (g.ip, ip) {
                (Some(a), Some(b)) => a == b,
                (None, None) => g.host == host,
                _ => false,
            };
            same_host && g.port.unwrap_or(default_port) == port
        })
    }
}

/// Whether `ip` is an ordinary public unicast address. Everything a plugin could use
/// to reach the host itself or its internal network is excluded.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public_v4(v4);
            }
            let s = v6.segments();
            // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) embed an IPv4 address.
            if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
                return is_public_v4(Ipv4Addr::new(
                    (s[6] >> 8) as u8,
                    s[6] as u8,
                    (s[7] >> 8) as u8,
                    s[7] as u8,
                ));
            }
            if s[0] == 0x2002 {
                return is_public_v4(Ipv4Addr::new(
                    (s[1] >> 8) as u8,
                    s[1] as u8,
                    (s[2] >> 8) as u8,
                    s[2] as u8,
                ));
            }
            !(v6.is_unspecified()
                || v6.is_loopback()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local fc00::/7
                || (s[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
                || (s[0] & 0xffc0) == 0xfec0 // site-local fec0::/10 (deprecated)
                || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
                || (s[0] == 0x0100 && s[1..4] == [0, 0, 0]) // discard-only 100::/64
                || s[0..6] == [0, 0, 0, 0, 0, 0]) // IPv4-compatible ::a.b.c.d
        }
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0 // "this network"
        || (a == 100 && (b & 0xc0) == 64) // shared address space (CGNAT) 100.64/10
        || (a == 192 && b == 0 && c == 0) // IETF protocol assignments
        || (a == 198 && (b & 0xfe) == 18) // benchmarking 198.18/15
        || a >= 240) // reserved
}

/// The per-call wasi:http hooks: one plugin's policy, the call's deadline and the
/// tags for log lines.
pub struct NetHooks {
    pub policy: Arc<NetPolicy>,
    pub deadline: Instant,
    pub plugin: Arc<str>,
    pub call_id: Arc<str>,
}

type IoFuture = Box<dyn Future<Output = Result<(), HttpError>> + Send>;
type SendResult = Result<(http::Response<WasiBody>, IoFuture), HttpError>;

impl WasiHttpHooks for NetHooks {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), HttpError>> + Send>,
    ) -> Box<dyn Future<Output = SendResult> + Send> {
        let target = check(&self.policy, &request);
        let (plugin, call_id, deadline) = (self.plugin.clone(), self.call_id.clone(), self.deadline);
        Box::new(async move {
            let target = match target {
                Ok(t) => t,
                Err(reason) => {
                    crate::warn!("plugin {plugin} call {call_id}: HTTP request denied: {reason}");
                    return Err(HttpError::HttpRequestDenied);
                }
            };
            let result = send(target, request, options, deadline).await;
            if let Err(e) = &result {
                crate::warn!("plugin {plugin} call {call_id}: HTTP request failed: {e}");
            }
            result
        })
    }
}

/// A request that passed the grant check: where to connect and how.
struct Target {
    host: String,
    port: u16,
    tls: bool,
    /// The grant is this IP literal: the address may be private.
    literal: Option<IpAddr>,
}

fn check(policy: &NetPolicy, request: &http::Request<WasiBody>) -> Result<Target, String> {
    let uri = request.uri();
    let tls = match uri.scheme() {
        Some(s) if *s == Scheme::HTTPS => true,
        Some(s) if *s == Scheme::HTTP => false,
        other => return Err(format!("unsupported scheme {other:?}")),
    };
    let raw_host = uri.host().ok_or("the URL has no host")?;
    let host = raw_host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase();
    let default_port = if tls { 443 } else { 80 };
    let port = uri.port_u16().unwrap_or(default_port);
    let grant = policy
        .grant_for(&host, port, default_port)
        .ok_or_else(|| format!("{host}:{port} is not granted by the plugin's manifest"))?;
    Ok(Target {
        literal: grant.ip,
        host,
        port,
        tls,
    })
}

/// Resolves `target` and keeps the addresses the policy allows.
async fn resolve(target: &Target, deadline: Instant) -> Result<Vec<SocketAddr>, HttpError> {
    if let Some(ip) = target.literal {
        return Ok(vec![SocketAddr::new(ip, target.port)]);
    }
    let lookup = tokio::net::lookup_host((target.host.as_str(), target.port));
    let addrs: Vec<SocketAddr> = match tokio::time::timeout_at(deadline, lookup).await {
        Err(_) => return Err(HttpError::DnsTimeout),
        Ok(Err(e)) => {
            return Err(HttpError::DnsError {
                rcode: Some(e.to_string()),
                info_code: None,
            });
        }
        Ok(Ok(addrs)) => addrs.collect(),
    };
    let public: Vec<SocketAddr> = addrs.iter().copied().filter(|a| is_public(a.ip())).collect();
    if public.is_empty() {
        crate::warn!(
            "HTTP request to {} refused: it resolves only to non-public addresses {addrs:?} \
             (grant the IP literal to allow that)",
            target.host
        );
        return Err(HttpError::DestinationIpProhibited);
    }
    Ok(public)
}

fn tls_config() -> Arc<rustls::ClientConfig> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let roots = rustls::RootCertStore {
                roots: webpki_roots::TLS_SERVER_ROOTS.into(),
            };
            let config = rustls::ClientConfig::builder_with_provider(Arc::new(
                rustls::crypto::ring::default_provider(),
            ))
            .with_safe_default_protocol_versions()
            .expect("ring supports the default TLS versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
            Arc::new(config)
        })
        .clone()
}

fn clamp(requested: Option<Duration>, deadline: Instant) -> Duration {
    let left = deadline.saturating_duration_since(Instant::now());
    requested.unwrap_or(left).min(left)
}

async fn send(
    target: Target,
    mut request: http::Request<WasiBody>,
    options: Option<RequestOptions>,
    deadline: Instant,
) -> SendResult {
    let addrs = resolve(&target, deadline).await?;
    let connect_by = Instant::now() + clamp(options.and_then(|o| o.connect_timeout), deadline);
    let mut last_error = None;
    let mut stream = None;
    for addr in addrs {
        match tokio::time::timeout_at(connect_by, tokio::net::TcpStream::connect(addr)).await {
            Ok(Ok(s)) => {
                stream = Some(s);
                break;
            }
            Ok(Err(e)) => last_error = Some(HttpError::Connect(e)),
            Err(_) => return Err(HttpError::ConnectionTimeout),
        }
    }
    let stream = stream.ok_or_else(|| last_error.unwrap_or(HttpError::ConnectionRefused))?;
    let _ = stream.set_nodelay(true);

    // Only the origin-form path goes on the wire; the Host header carries the name.
    let path = request
        .uri()
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/")
        .to_string();
    *request.uri_mut() = http::Uri::builder()
        .path_and_query(path)
        .build()
        .map_err(|_| HttpError::HttpRequestUriInvalid)?;

    let first_byte_by = Instant::now() + clamp(options.and_then(|o| o.first_byte_timeout), deadline);
    let between = clamp(options.and_then(|o| o.between_bytes_timeout), deadline);
    if target.tls {
        let name = match target.host.parse::<IpAddr>() {
            Ok(ip) => rustls::pki_types::ServerName::from(ip),
            Err(_) => {
                rustls::pki_types::ServerName::try_from(target.host.clone()).map_err(HttpError::from)?
            }
        };
        let connector = tokio_rustls::TlsConnector::from(tls_config());
        let tls = tokio::time::timeout_at(connect_by, connector.connect(name, stream))
            .await
            .map_err(|_| HttpError::ConnectionTimeout)?
            .map_err(HttpError::Tls)?;
        exchange(TokioIo::new(tls), request, first_byte_by, between, deadline).await
    } else {
        exchange(TokioIo::new(stream), request, first_byte_by, between, deadline).await
    }
}

/// Runs one HTTP/1 exchange on a connected stream: drives the connection while
/// waiting for the response head, then hands the connection driver back as the
/// I/O future wasi-http keeps polling while the body streams.
async fn exchange<T>(
    io: TokioIo<T>,
    request: http::Request<WasiBody>,
    first_byte_by: Instant,
    between: Duration,
    deadline: Instant,
) -> SendResult
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let (mut sender, conn) =
        tokio::time::timeout_at(first_byte_by, hyper::client::conn::http1::handshake(io))
            .await
            .map_err(|_| HttpError::ConnectionTimeout)??;
    let mut conn = Box::pin(conn);
    let mut conn_done = false;
    let mut response = std::pin::pin!(sender.send_request(request));
    // Drive the connection (until it ends) while the response head is awaited.
    let head = tokio::time::timeout_at(
        first_byte_by,
        std::future::poll_fn(|cx| {
            if !conn_done && let Poll::Ready(ended) = conn.as_mut().poll(cx) {
                conn_done = true;
                if let Err(e) = ended {
                    return Poll::Ready(Err(HttpError::from(e)));
                }
            }
            response.as_mut().poll(cx).map_err(HttpError::from)
        }),
    )
    .await
    .map_err(|_| HttpError::ConnectionReadTimeout)??;
    let (parts, incoming) = head.into_parts();
    let response = http::Response::from_parts(
        parts,
        DeadlineBody::new(incoming, between, deadline).boxed_unsync(),
    );
    let io: IoFuture = Box::new(async move {
        if conn_done {
            return Ok(());
        }
        conn.await.map_err(HttpError::from)
    });
    Ok((response, io))
}

/// A response body that fails with a read timeout when no frame arrives within the
/// between-bytes timeout, or when the call's deadline passes.
struct DeadlineBody {
    inner: hyper::body::Incoming,
    between: Duration,
    deadline: Instant,
    timer: Pin<Box<Sleep>>,
}

impl DeadlineBody {
    fn new(inner: hyper::body::Incoming, between: Duration, deadline: Instant) -> DeadlineBody {
        let timer = Box::pin(tokio::time::sleep_until((Instant::now() + between).min(deadline)));
        DeadlineBody {
            inner,
            between,
            deadline,
            timer,
        }
    }
}

impl Body for DeadlineBody {
    type Data = Bytes;
    type Error = HttpError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, HttpError>>> {
        match Pin::new(&mut self.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                let next = (Instant::now() + self.between).min(self.deadline);
                self.timer.as_mut().reset(next);
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(HttpError::from(e)))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => match self.timer.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Some(Err(HttpError::ConnectionReadTimeout))),
                Poll::Pending => Poll::Pending,
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn private_and_special_addresses_are_not_public() {
        for s in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "255.255.255.255",
            "224.0.0.1",
            "198.18.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "64:ff9b::a00:1",
            "2002:7f00:1::",
            "2001:db8::1",
            "::127.0.0.1",
        ] {
            assert!(!is_public(ip(s)), "{s} must not be public");
        }
        for s in [
            "93.184.216.34",
            "1.1.1.1",
            "2606:4700:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert!(is_public(ip(s)), "{s} must be public");
        }
    }

    #[test]
    fn grants_match_host_and_port() {
        let policy = NetPolicy::new(
            [
                "en.wikipedia.org",
                "127.0.0.1:8080",
                "[::1]:9000",
                "api.example.com:8443",
            ]
            .iter()
            .map(|g| HostGrant::parse(g).unwrap())
            .collect(),
        );
        assert!(policy.grant_for("en.wikipedia.org", 443, 443).is_some());
        assert!(policy.grant_for("en.wikipedia.org", 80, 80).is_some());
        assert!(
            policy.grant_for("en.wikipedia.org", 8080, 443).is_none(),
            "no port = default port only"
        );
        assert!(policy.grant_for("de.wikipedia.org", 443, 443).is_none());
        assert!(policy.grant_for("127.0.0.1", 8080, 80).unwrap().ip.is_some());
        assert!(policy.grant_for("127.0.0.1", 8081, 80).is_none());
        assert!(policy.grant_for("::1", 9000, 80).is_some());
        assert!(policy.grant_for("api.example.com", 443, 443).is_none());
        assert!(policy.grant_for("api.example.com", 8443, 443).is_some());
    }
}
