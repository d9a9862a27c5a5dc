"""EXCALIBUR's learners: the supervised answerer over an object memory (``answerer``; the memory is
``envs.excalibur.memory``, the network ``networks.excalibur.ExcaliburAnswerer``) and the PPO explorer over that memory
(``explorer``; its training view is ``envs.excalibur.explorer_env``); ``family`` declares them."""
