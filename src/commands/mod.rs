pub mod audit;
pub mod check;
pub mod doctor;
pub mod image;
pub mod policy;
pub mod run;
