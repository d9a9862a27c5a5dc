"""EXCALIBUR's learners: an explicit object memory (``memory``) and a supervised answerer that reads it
(``answerer``; the network is ``networks.excalibur.ExcaliburAnswerer``)."""
