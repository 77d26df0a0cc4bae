//! [`RemoteOptions`]: how a remote object is reached.

use crate::error::{Error, OptionError, Result};
use std::time::Duration;

/// How a remote object is reached: credentials, region, endpoint, anonymous access, retries.
///
/// [`RemoteOptions::from_env`] starts from the environment (what the command line uses);
/// explicit settings override it. [`RemoteOptions::set`] takes the keys Python's
/// `storage_options` use.
///
/// There is no process-wide setting: every function that may read or write a URL takes its
/// options with the call ([`crate::open_with`], [`crate::Archive::open_url`],
/// [`crate::UnpackOptions::with_remote`], [`crate::VerifyOptions::with_remote`],
/// [`crate::info::InfoOptions::with_remote`], [`crate::collection::CollectionOptions::with_remote`],
/// [`crate::collection::verify_collection_with`], ...), and one given none (such as
/// [`crate::open`] or [`crate::Archive::open`] on a URL) uses [`RemoteOptions::from_env`],
/// read at that call.
///
/// ```
/// let o = nc3pack::remote::RemoteOptions::default()
///     .with_endpoint("http://127.0.0.1:9000")
///     .with_allow_http(true)
///     .with_credentials("AKIA...", "secret", None);
/// assert!(!o.anon());
/// ```
#[derive(Clone, Debug)]
pub struct RemoteOptions {
    pub(super) from_env: bool,
    pub(super) anon: bool,
    pub(super) endpoint: Option<String>,
    pub(super) region: Option<String>,
    pub(super) access_key_id: Option<String>,
    pub(super) secret_access_key: Option<String>,
    pub(super) session_token: Option<String>,
    pub(super) allow_http: Option<bool>,
    pub(super) max_retries: usize,
    pub(super) retry_timeout: Duration,
    pub(super) timeout: Duration,
}

impl Default for RemoteOptions {
    /// Nothing from the environment, signed requests, 5 retries within 60 s, a request timing
    /// out after 120 s.
    fn default() -> Self {
        RemoteOptions {
            from_env: false,
            anon: false,
            endpoint: None,
            region: None,
            access_key_id: None,
            secret_access_key: None,
            session_token: None,
            allow_http: None,
            max_retries: 5,
            retry_timeout: Duration::from_secs(60),
            timeout: Duration::from_secs(120),
        }
    }
}

impl RemoteOptions {
    /// Options read from the environment: the `AWS_*` variables (as `object_store` reads them)
    /// when the store is built, and anonymous access when `NC3PACK_ANON` is `1`, `true` or
    /// `yes`.
    ///
    /// ```
    /// let o = nc3pack::remote::RemoteOptions::from_env();
    /// # let _ = o;
    /// ```
    pub fn from_env() -> Self {
        let anon = std::env::var("NC3PACK_ANON")
            .is_ok_and(|v| matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes"));
        RemoteOptions {
            from_env: true,
            anon,
            ..RemoteOptions::default()
        }
    }

    /// Anonymous (unsigned) requests, for public buckets.
    pub fn with_anon(mut self, anon: bool) -> Self {
        self.anon = anon;
        self
    }

    /// Whether requests are anonymous.
    pub fn anon(&self) -> bool {
        self.anon
    }

    /// The S3 endpoint (e.g. `http://127.0.0.1:9000` for a local server).
    pub fn with_endpoint(mut self, endpoint: impl Into<String>) -> Self {
        self.endpoint = Some(endpoint.into());
        self
    }

    /// The S3 region.
    pub fn with_region(mut self, region: impl Into<String>) -> Self {
        self.region = Some(region.into());
        self
    }

    /// Static credentials: access key id, secret, optional session token.
    pub fn with_credentials(
        mut self,
        key: impl Into<String>,
        secret: impl Into<String>,
        token: Option<String>,
    ) -> Self {
        self.access_key_id = Some(key.into());
        self.secret_access_key = Some(secret.into());
        self.session_token = token;
        self
    }

    /// Allows plain `http://` endpoints.
    pub fn with_allow_http(mut self, allow: bool) -> Self {
        self.allow_http = Some(allow);
        self
    }

    /// Retries of a transient failure (5xx, timeouts, connection resets), with exponential
    /// backoff, and the time after which no retry starts.
    pub fn with_retries(mut self, max_retries: usize, timeout: Duration) -> Self {
        self.max_retries = max_retries;
        self.retry_timeout = timeout;
        self
    }

    /// How long a request waits for its answer, and then for each next piece of the answer's
    /// body, before it times out (120 s by default): a timeout is a transient failure, retried
    /// as [`RemoteOptions::with_retries`] allows.
    ///
    /// ```
    /// let o = nc3pack::remote::RemoteOptions::default()
    ///     .with_timeout(std::time::Duration::from_secs(20));
    /// # let _ = o;
    /// ```
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sets one option by the name Python's `storage_options` (s3fs) use: `anon`, `key`,
    /// `secret`, `token`, `endpoint_url`, `region` (or `region_name`), `allow_http`; the
    /// `aws_*` spellings (`aws_access_key_id`, ...) are accepted too.
    ///
    /// ```
    /// let o = nc3pack::remote::RemoteOptions::default().set("anon", "true").unwrap();
    /// assert!(o.anon());
    /// assert!(nc3pack::remote::RemoteOptions::default().set("colour", "red").is_err());
    /// ```
    ///
    /// # Errors
    ///
    /// [`Error::Option`] for an unknown name or a value that is not a boolean where one is
    /// needed.
    pub fn set(mut self, name: &str, value: &str) -> Result<Self> {
        let flag = |v: &str| match v.to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" => Ok(true),
            "0" | "false" | "no" => Ok(false),
            _ => Err(Error::Option(OptionError::StorageBool {
                name: name.into(),
                value: v.into(),
            })),
        };
        match name {
            "anon" => self.anon = flag(value)?,
            "allow_http" | "aws_allow_http" => self.allow_http = Some(flag(value)?),
            "key" | "access_key_id" | "aws_access_key_id" => {
                self.access_key_id = Some(value.into())
            }
            "secret" | "secret_access_key" | "aws_secret_access_key" => {
                self.secret_access_key = Some(value.into())
            }
            "token" | "session_token" | "aws_session_token" => {
                self.session_token = Some(value.into())
            }
            "endpoint_url" | "endpoint" | "aws_endpoint_url" => self.endpoint = Some(value.into()),
            "region" | "region_name" | "aws_region" => self.region = Some(value.into()),
            _ => {
                return Err(Error::Option(OptionError::StorageName {
                    name: name.into(),
                }))
            }
        }
        Ok(self)
    }
}
