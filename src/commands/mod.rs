pub mod audit;
pub mod check;
pub mod doctor;
pub mod exec_dirs;
pub mod home;
pub mod image;
pub mod policy;
pub mod run;
