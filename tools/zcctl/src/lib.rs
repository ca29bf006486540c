//! zcctl's command line ([`cli`]), shared by the tool and the man pages
//! (`zcman`).

pub mod cli;
