nlayers = 18
colours = '#4c72b0 #64b5cd #2a4d7a #8da0cb #55a868 #8fd175 #ccb974 #8172b3 #b59bd9 #da8bc3 #937860 #dd8452 #f0b27a #f5d6b3 #c44e52 #6b8e23 #bcbcbc #e0e0e0'
unit = 'microseconds of server CPU per accepted connection'
ttl = 'Server CPU per accepted connection, by layer (ramp)'
