//! Serving a catalog over HTTP: the server, its bounds against abuse, and the web catalog.

mod abuse;
mod bounds;
mod http;
mod web;
