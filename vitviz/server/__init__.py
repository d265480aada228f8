"""What a shared server lets its visitors do: which files and models they may load
(``access``), one check per kind of value they send (``values``), a time limit for one
thread's work (``deadline``), and the classes that follow their teacher (``classes``)."""
