//! Operating a cluster from outside the master: [`client`] is the typed API
//! client (used by the CLI, the loader, the experiment runner and the
//! tests); [`loader`] generates or splits files into replicated blocks;
//! [`local`] starts and stops a cluster of local processes; [`netns`] does
//! the same in Linux network namespaces with shaped links; [`docker`] in
//! containers; [`remote`] starts workers on other machines over ssh; [`report`]
//! formats job reports for people; [`files`] reads files back (`master
//! get`) and deletes them; [`verify`] holds the coreutils references
//! outputs are checked against.

pub mod client;
pub mod docker;
pub mod files;
pub mod loader;
pub mod local;
pub mod netns;
pub mod remote;
pub mod report;
pub mod verify;
