"""Frontend: read a function's source (parse), refuse what we cannot handle
(fence), and bring it to A-normal form (normalize)."""
