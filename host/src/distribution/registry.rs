//! One registry's HTTP API (OCI distribution v2) over the hub's own client
//! (`http_client`): manifests and blobs by digest or tag, blob uploads, and the 401
//! dance (`auth`): a Basic or Bearer challenge answered once per request, the token
//! kept for the following ones. Every response is read within `plugins.max_pull_mb`
//! and every request within `plugins.timeout_secs`; plain HTTP only to loopback
//! registries unless `insecure_http`.

use super::auth::{Challenge, Credentials, token_from};
use super::manifest::{ACCEPT, digest_of};
use super::{DistError, Options, Reference};
use crate::http_client;
use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode, Uri, header};
use http_body_util::{BodyExt, Full, Limited};
use std::time::Duration;

/// A response read whole.
pub(super) struct Reply {
    pub(super) status: StatusCode,
    pub(super) headers: HeaderMap,
    pub(super) body: Bytes,
}

/// A client of one registry and repository.
pub(super) struct RegistryClient {
    https: bool,
    host: String,
    port: u16,
    authority: String,
    repository: String,
    credentials: Option<Credentials>,
    /// The `Authorization` value that worked last (Basic, or a Bearer token).
    authorization: Option<String>,
    max_bytes: usize,
    timeout: Duration,
}

impl RegistryClient {
    /// A client for `reference`'s registry and repository.
    pub(super) fn new(reference: &Reference, options: &Options) -> Result<RegistryClient, DistError> {
        let https = !(reference.is_loopback() || options.insecure_http);
        let credentials = Credentials::find(&reference.registry()).map_err(DistError::Credentials)?;
        Ok(RegistryClient {
            https,
            host: reference.host.clone(),
            port: reference.port.unwrap_or(if https { 443 } else { 80 }),
            authority: reference.registry(),
            repository: reference.repository.clone(),
            credentials,
            authorization: None,
            max_bytes: usize::try_from(options.max_pull_mb.saturating_mul(1 << 20)).unwrap_or(usize::MAX),
            timeout: Duration::from_secs(options.timeout_secs),
        })
    }

    /// `/v2/<repository>/<rest>`.
    pub(super) fn path(&self, rest: &str) -> String {
        format!("/v2/{}/{rest}", self.repository)
    }

    /// The manifest at `target` (tag or digest): its bytes and `sha256:` digest,
    /// checked against `target` when that is a digest; `Ok(None)` on 404.
    pub(super) async fn manifest(&mut self, target: &str) -> Result<Option<(Bytes, String)>, DistError> {
        let path = self.path(&format!("manifests/{target}"));
        let reply = self
            .send(Method::GET, &path, &[(header::ACCEPT, ACCEPT)], Bytes::new())
            .await?;
        if reply.status == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        let reply = expect(reply, &[StatusCode::OK], &format!("GET manifest {target}"))?;
        let digest = digest_of(&reply.body);
        if target.starts_with("sha256:") && target != digest {
            return Err(DistError::DigestMismatch {
                what: format!("manifest {target}"),
                actual: digest,
            });
        }
        Ok(Some((reply.body, digest)))
    }

    /// The blob `digest`, checked against it.
    pub(super) async fn blob(&mut self, digest: &str) -> Result<Bytes, DistError> {
        let what = format!("GET blob {digest}");
        let mut path = self.path(&format!("blobs/{digest}"));
        for _ in 0..4 {
            let reply = self.send(Method::GET, &path, &[], Bytes::new()).await?;
            if reply.status.is_redirection() {
                // Registries hand blobs to a CDN: follow within this registry only.
                path = self.same_host_location(&reply, &what)?;
                continue;
            }
            let reply = expect(reply, &[StatusCode::OK], &what)?;
            let actual = digest_of(&reply.body);
            if actual != digest {
                return Err(DistError::DigestMismatch {
                    what: format!("blob {digest}"),
                    actual,
                });
            }
            return Ok(reply.body);
        }
        Err(DistError::Protocol(format!("{what}: too many redirects")))
    }

    /// Uploads `bytes` as a blob unless the registry has it (a monolithic upload:
    /// POST for a session, then PUT with the digest).
    pub(super) async fn push_blob(&mut self, bytes: Bytes) -> Result<String, DistError> {
        let digest = digest_of(&bytes);
        let head = self
            .send(
                Method::HEAD,
                &self.path(&format!("blobs/{digest}")),
                &[],
                Bytes::new(),
            )
            .await?;
        if head.status == StatusCode::OK {
            return Ok(digest);
        }
        let what = format!("upload blob {digest}");
        let start = self
            .send(Method::POST, &self.path("blobs/uploads/"), &[], Bytes::new())
            .await?;
        let start = expect(start, &[StatusCode::ACCEPTED], &what)?;
        let location = self.same_host_location(&start, &what)?;
        let sep = if location.contains('?') { '&' } else { '?' };
        let put = format!("{location}{sep}digest={digest}");
        let headers = [(header::CONTENT_TYPE, "application/octet-stream")];
        let done = self.send(Method::PUT, &put, &headers, bytes).await?;
        expect(done, &[StatusCode::CREATED], &what)?;
        Ok(digest)
    }

    /// Puts a manifest under `target` (a tag or its digest).
    pub(super) async fn push_manifest(
        &mut self,
        target: &str,
        media_type: &str,
        bytes: Bytes,
    ) -> Result<(), DistError> {
        let path = self.path(&format!("manifests/{target}"));
        let reply = self
            .send(Method::PUT, &path, &[(header::CONTENT_TYPE, media_type)], bytes)
            .await?;
        expect(
            reply,
            &[StatusCode::CREATED, StatusCode::OK],
            &format!("PUT manifest {target}"),
        )?;
        Ok(())
    }

    /// The path and query of a response's `Location`, which must be on this registry.
    fn same_host_location(&self, reply: &Reply, what: &str) -> Result<String, DistError> {
        let location = reply
            .headers
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| DistError::Protocol(format!("{what}: {} without a Location", reply.status)))?;
        let uri: Uri = location
            .parse()
            .map_err(|_| DistError::Protocol(format!("{what}: Location {location:?} is not a URI")))?;
        if let Some(authority) = uri.authority()
            && authority.as_str() != self.authority
            && authority.host() != self.host
        {
            return Err(DistError::Protocol(format!(
                "{what}: the registry sends it to another host ({authority}), which this client does not follow"
            )));
        }
        Ok(uri
            .path_and_query()
            .map_or("/".into(), |p| p.as_str().to_string()))
    }

    /// Sends a request; on a 401, answers its challenge once and sends it again.
    pub(super) async fn send(
        &mut self,
        method: Method,
        path: &str,
        headers: &[(header::HeaderName, &str)],
        body: Bytes,
    ) -> Result<Reply, DistError> {
        let reply = self.send_once(&method, path, headers, body.clone()).await?;
        if reply.status != StatusCode::UNAUTHORIZED {
            return Ok(reply);
        }
        let challenge = reply
            .headers
            .get(header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .and_then(Challenge::parse)
            .ok_or_else(|| self.unauthorized("401 without a Basic or Bearer challenge"))?;
        self.authorization = Some(match challenge {
            Challenge::Basic => self
                .credentials
                .as_ref()
                .ok_or_else(|| {
                    self.unauthorized("it asks for a username and password and none are configured")
                })?
                .basic(),
            Challenge::Bearer {
                realm,
                service,
                scope,
            } => {
                format!("Bearer {}", self.token(&realm, service, scope).await?)
            }
        });
        let reply = self.send_once(&method, path, headers, body).await?;
        match reply.status {
            StatusCode::UNAUTHORIZED => Err(self.unauthorized("the credentials were refused")),
            _ => Ok(reply),
        }
    }

    /// A token from the Bearer challenge's realm, with the credentials if any.
    async fn token(
        &self,
        realm: &str,
        service: Option<String>,
        scope: Option<String>,
    ) -> Result<String, DistError> {
        let mut url = realm.to_string();
        let mut sep = if url.contains('?') { '&' } else { '?' };
        for (k, v) in [("service", service), ("scope", scope)] {
            if let Some(v) = v {
                url.push_str(&format!("{sep}{k}={}", crate::percent::encode(&v)));
                sep = '&';
            }
        }
        let uri: Uri = url
            .parse()
            .map_err(|_| self.unauthorized("the token realm is not a URL"))?;
        let https = uri.scheme_str() == Some("https");
        let host = uri
            .host()
            .ok_or_else(|| self.unauthorized("the token realm has no host"))?;
        let loopback = host == "localhost"
            || host
                .trim_matches(['[', ']'])
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback());
        if !https && !loopback && self.https {
            return Err(self.unauthorized("the token realm is plain HTTP to another machine"));
        }
        let endpoint = Endpoint {
            https,
            host: host.trim_matches(['[', ']']).to_string(),
            port: uri.port_u16().unwrap_or(if https { 443 } else { 80 }),
            authority: uri.authority().map_or(host.to_string(), |a| a.to_string()),
        };
        let mut req = Request::get(uri.path_and_query().map_or("/", |p| p.as_str()))
            .header(header::HOST, &endpoint.authority);
        if let Some(c) = &self.credentials {
            req = req.header(header::AUTHORIZATION, c.basic());
        }
        let req = req
            .body(Full::new(Bytes::new()))
            .map_err(|e| DistError::Protocol(e.to_string()))?;
        let reply = exchange(&endpoint, req, self.max_bytes, self.timeout, "GET token").await?;
        if !reply.status.is_success() {
            return Err(self.unauthorized(&format!("the token endpoint answered {}", reply.status)));
        }
        token_from(&reply.body).ok_or_else(|| self.unauthorized("the token endpoint's answer has no token"))
    }

    fn unauthorized(&self, why: &str) -> DistError {
        DistError::Unauthorized {
            registry: self.authority.clone(),
            why: why.to_string(),
        }
    }

    async fn send_once(
        &self,
        method: &Method,
        path: &str,
        headers: &[(header::HeaderName, &str)],
        body: Bytes,
    ) -> Result<Reply, DistError> {
        let mut req = Request::builder()
            .method(method.clone())
            .uri(path)
            .header(header::HOST, &self.authority)
            .header(header::USER_AGENT, concat!("wasmhub/", env!("CARGO_PKG_VERSION")))
            .header(header::CONTENT_LENGTH, body.len());
        for (name, value) in headers {
            req = req.header(name, *value);
        }
        if let Some(auth) = &self.authorization {
            req = req.header(header::AUTHORIZATION, auth);
        }
        let req = req
            .body(Full::new(body))
            .map_err(|e| DistError::Protocol(e.to_string()))?;
        let endpoint = Endpoint {
            https: self.https,
            host: self.host.clone(),
            port: self.port,
            authority: self.authority.clone(),
        };
        exchange(
            &endpoint,
            req,
            self.max_bytes,
            self.timeout,
            &format!("{method} {path}"),
        )
        .await
    }
}

/// Where a request goes.
struct Endpoint {
    https: bool,
    host: String,
    port: u16,
    authority: String,
}

/// One request on a fresh connection, its response read whole within `max_bytes`,
/// all within `timeout`.
async fn exchange(
    to: &Endpoint,
    req: Request<Full<Bytes>>,
    max_bytes: usize,
    timeout: Duration,
    what: &str,
) -> Result<Reply, DistError> {
    let work = async {
        let addrs = tokio::net::lookup_host((to.host.as_str(), to.port))
            .await
            .map_err(|e| DistError::Connect {
                registry: to.authority.clone(),
                source: Box::new(e),
            })?;
        let connect = |e: http_client::ConnectError| DistError::Connect {
            registry: to.authority.clone(),
            // The address is the registry's: its I/O error says the rest.
            source: match e {
                http_client::ConnectError::Tcp { source, .. } => Box::new(source),
                e => Box::new(e),
            },
        };
        let tcp = http_client::connect_tcp(addrs).await.map_err(connect)?;
        let stream = http_client::wrap(tcp, to.https.then_some(to.host.as_str()))
            .await
            .map_err(connect)?;
        let http = |e: hyper::Error| DistError::Http {
            what: what.to_string(),
            source: e,
        };
        let (mut sender, conn) = http_client::handshake(stream).await.map_err(http)?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let response = sender.send_request(req).await.map_err(http)?;
        let (parts, body) = response.into_parts();
        let body = Limited::new(body, max_bytes)
            .collect()
            .await
            .map_err(|e| match e.downcast::<hyper::Error>() {
                Ok(e) => http(*e),
                Err(_) => DistError::TooLarge {
                    what: what.to_string(),
                    limit_mb: (max_bytes >> 20) as u64,
                },
            })?
            .to_bytes();
        Ok(Reply {
            status: parts.status,
            headers: parts.headers,
            body,
        })
    };
    tokio::time::timeout(timeout, work)
        .await
        .map_err(|_| DistError::Timeout {
            what: what.to_string(),
            secs: timeout.as_secs(),
        })?
}

/// `reply` when its status is one of `ok`, else the registry's error (its
/// `errors[0].message` when it sent one).
fn expect(reply: Reply, ok: &[StatusCode], what: &str) -> Result<Reply, DistError> {
    if ok.contains(&reply.status) {
        return Ok(reply);
    }
    let message = serde_json::from_slice::<serde_json::Value>(&reply.body)
        .ok()
        .and_then(|v| {
            let e = v.get("errors")?.get(0)?;
            Some(format!(
                "{}: {}",
                e.get("code")?.as_str()?,
                e.get("message").and_then(|m| m.as_str()).unwrap_or("")
            ))
        })
        .unwrap_or_else(|| String::from_utf8_lossy(&reply.body[..reply.body.len().min(200)]).into_owned());
    Err(DistError::Status {
        what: what.to_string(),
        status: reply.status.as_u16(),
        message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_only_for_loopback_unless_insecure_http() {
        let options = |insecure_http| Options {
            insecure_http,
            max_pull_mb: 1,
            timeout_secs: 1,
        };
        let scheme = |text: &str, insecure| {
            let r = RegistryClient::new(&Reference::parse(text).unwrap(), &options(insecure)).unwrap();
            (r.https, r.port)
        };
        assert_eq!(scheme("oci://registry.example/x:1", false), (true, 443));
        assert_eq!(scheme("oci://registry.example:5000/x:1", true), (false, 5000));
        assert_eq!(scheme("oci://registry.example/x:1", true), (false, 80));
        assert_eq!(scheme("oci://127.0.0.1:5000/x:1", false), (false, 5000));
        assert_eq!(scheme("oci://localhost/x:1", false), (false, 80));
    }

    #[test]
    fn scopes_are_escaped_and_registry_errors_are_read() {
        assert_eq!(
            crate::percent::encode("repository:a/b:pull,push"),
            "repository%3Aa%2Fb%3Apull%2Cpush"
        );
        let reply = Reply {
            status: StatusCode::NOT_FOUND,
            headers: HeaderMap::new(),
            body: Bytes::from_static(
                br#"{"errors":[{"code":"MANIFEST_UNKNOWN","message":"manifest unknown"}]}"#,
            ),
        };
        let e = expect(reply, &[StatusCode::OK], "GET manifest 1.0")
            .err()
            .unwrap();
        assert_eq!(
            e.to_string(),
            "GET manifest 1.0: the registry answered 404: MANIFEST_UNKNOWN: manifest unknown"
        );
    }
}
