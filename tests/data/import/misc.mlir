module @jit_misc attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x4xf32>, %arg1: tensor<4x3xi1>, %arg2: tensor<2xi32>) -> (tensor<4x4xf32> {jax.result_info = "result[0]"}, tensor<4x4xf32> {jax.result_info = "result[1]"}, tensor<4x4xf32> {jax.result_info = "result[2]"}, tensor<4x4xf32> {jax.result_info = "result[3]"}, tensor<4xi1> {jax.result_info = "result[4]"}, tensor<i1> {jax.result_info = "result[5]"}, tensor<4x4xf32> {jax.result_info = "result[6]"}, tensor<4x4xf32> {jax.result_info = "result[7]"}, tensor<4x4xf32> {jax.result_info = "result[8]"}, tensor<4x4xf32> {jax.result_info = "result[9]"}, tensor<4x4xi1> {jax.result_info = "result[10]"}, tensor<4x4xf32> {jax.result_info = "result[11]"}) {
    %cst = stablehlo.constant dense<"0x000080BFC2517DBF85A37ABF47F577BF094775BFCC9872BF8EEA6FBF503C6DBF138E6ABFD5DF67BF973165BF5A8362BF1CD55FBFDE265DBFA1785ABF63CA57BF261C55BFE86D52BFAABF4FBF6D114DBF2F634ABFF1B447BFB40645BF765842BF38AA3FBFFBFB3CBFBD4D3ABF7F9F37BF42F134BF044332BFC6942FBF89E62CBF4B382ABF0D8A27BFD0DB24BF922D22BF547F1FBF17D11CBFD9221ABF9B7417BF5EC614BF201812BFE3690FBFA5BB0CBF670D0ABF2A5F07BFECB004BFAE0202BFE1A8FEBE664CF9BEEBEFF3BE6F93EEBEF436E9BE79DAE3BEFD7DDEBE8221D9BE07C5D3BE8B68CEBE100CC9BE95AFC3BE1953BEBE9EF6B8BE239AB3BEA83DAEBE2CE1A8BEB184A3BE36289EBEBACB98BE3F6F93BEC4128EBE48B688BECD5983BEA4FA7BBEAD4171BEB68866BEC0CF5BBEC91651BED25D46BEDCA43BBEE5EB30BEEF3226BEF8791BBE01C110BE0B0806BE289EF6BD3B2CE1BD4EBACBBD6148B6BD73D6A0BD86648BBD32E56BBD570141BD7D1D16BD4473D6BC8FAB80BC6A8FABBB6A8FAB3B8FAB803C4473D63C7D1D163D5701413D32E56B3D86648B3D73D6A03D6148B63D4EBACB3D3B2CE13D289EF63D0B08063E01C1103EF8791B3EEF32263EE5EB303EDCA43B3ED25D463EC916513EC0CF5B3EB688663EAD41713EA4FA7B3ECD59833E48B6883EC4128E3E3F6F933EBACB983E36289E3EB184A33E2CE1A83EA83DAE3E239AB33E9EF6B83E1953BE3E95AFC33E100CC93E8B68CE3E07C5D33E8221D93EFD7DDE3E79DAE33EF436E93E6F93EE3EEBEFF33E664CF93EE1A8FE3EAE02023FECB0043F2A5F073F670D0A3FA5BB0C3FE3690F3F2018123F5EC6143F9B74173FD9221A3F17D11C3F547F1F3F922D223FD0DB243F0D8A273F4B382A3F89E62C3FC6942F3F0443323F42F1343F7F9F373FBD4D3A3FFBFB3C3F38AA3F3F7658423FB406453FF1B4473F2F634A3F6D114D3FAABF4F3FE86D523F261C553F63CA573FA1785A3FDE265D3F1CD55F3F5A83623F9731653FD5DF673F138E6A3F503C6D3F8EEA6F3FCC98723F0947753F47F5773F85A37A3FC2517D3F0000803F"> : tensor<12x16xf32>
    %0 = stablehlo.convert %arg0 : (tensor<4x4xf32>) -> tensor<4x4xbf16>
    %cst_0 = stablehlo.constant dense<2.000000e+00> : tensor<bf16>
    %1 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<bf16>) -> tensor<4x4xbf16>
    %2 = stablehlo.multiply %0, %1 : tensor<4x4xbf16>
    %3 = stablehlo.convert %2 : (tensor<4x4xbf16>) -> tensor<4x4xf32>
    %cst_1 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %5:2 = stablehlo.optimization_barrier %arg0, %4 : tensor<4x4xf32>, tensor<4x4xf32>
    %6 = stablehlo.sine %5#0 : tensor<4x4xf32>
    %7 = stablehlo.cosine %5#0 : tensor<4x4xf32>
    %8 = stablehlo.cosine %6 : tensor<4x4xf32>
    %cst_2 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %9 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %10 = stablehlo.multiply %5#1, %9 : tensor<4x4xf32>
    %11 = stablehlo.multiply %10, %8 : tensor<4x4xf32>
    %12 = stablehlo.multiply %11, %7 : tensor<4x4xf32>
    %13 = call @cumsum(%arg0) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %14 = stablehlo.slice %cst [0:4, 0:4] : (tensor<12x16xf32>) -> tensor<4x4xf32>
    %15 = stablehlo.dot_general %arg0, %14, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %c = stablehlo.constant dense<true> : tensor<i1>
    %16 = stablehlo.reduce(%arg1 init: %c) applies stablehlo.and across dimensions = [1] : (tensor<4x3xi1>, tensor<i1>) -> tensor<4xi1>
    %c_3 = stablehlo.constant dense<false> : tensor<i1>
    %17 = stablehlo.reduce(%arg1 init: %c_3) applies stablehlo.or across dimensions = [0, 1] : (tensor<4x3xi1>, tensor<i1>) -> tensor<i1>
    %c_4 = stablehlo.constant dense<0> : tensor<i32>
    %18 = stablehlo.broadcast_in_dim %c_4, dims = [] : (tensor<i32>) -> tensor<2xi32>
    %19 = stablehlo.compare LT, %arg2, %18, SIGNED : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi1>
    %c_5 = stablehlo.constant dense<4> : tensor<i32>
    %20 = stablehlo.broadcast_in_dim %c_5, dims = [] : (tensor<i32>) -> tensor<2xi32>
    %21 = stablehlo.add %arg2, %20 : tensor<2xi32>
    %22 = stablehlo.select %19, %21, %arg2 : tensor<2xi1>, tensor<2xi32>
    %23 = stablehlo.broadcast_in_dim %22, dims = [0] : (tensor<2xi32>) -> tensor<2x1xi32>
    %cst_6 = stablehlo.constant dense<-1.000000e+00> : tensor<f32>
    %24 = stablehlo.broadcast_in_dim %cst_6, dims = [] : (tensor<f32>) -> tensor<2x4xf32>
    %25 = "stablehlo.scatter"(%arg0, %23, %24) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
    ^bb0(%arg3: tensor<f32>, %arg4: tensor<f32>):
      stablehlo.return %arg4 : tensor<f32>
    }) : (tensor<4x4xf32>, tensor<2x1xi32>, tensor<2x4xf32>) -> tensor<4x4xf32>
    %26 = call @_flip(%arg0) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %27 = stablehlo.exponential_minus_one %arg0 : tensor<4x4xf32>
    %cst_7 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %28 = stablehlo.broadcast_in_dim %cst_7, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %29 = stablehlo.multiply %arg0, %28 : tensor<4x4xf32>
    %30 = stablehlo.ceil %29 : tensor<4x4xf32>
    %31 = stablehlo.slice %arg0 [0:1, 0:1] : (tensor<4x4xf32>) -> tensor<1x1xf32>
    %32 = stablehlo.reshape %31 : (tensor<1x1xf32>) -> tensor<f32>
    %33 = stablehlo.broadcast_in_dim %32, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %34 = stablehlo.subtract %arg0, %33 : tensor<4x4xf32>
    %35 = stablehlo.divide %arg0, %34 : tensor<4x4xf32>
    %36 = stablehlo.is_finite %35 : (tensor<4x4xf32>) -> tensor<4x4xi1>
    %cst_8 = stablehlo.constant dense<7.000000e+00> : tensor<f32>
    %37 = stablehlo.broadcast_in_dim %cst_8, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %38 = stablehlo.multiply %arg0, %37 : tensor<4x4xf32>
    %cst_9 = stablehlo.constant dense<1.500000e+00> : tensor<f32>
    %39 = call @fmod(%38, %cst_9) : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
    return %13, %3, %15, %12, %16, %17, %25, %26, %27, %30, %36, %39 : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4xi1>, tensor<i1>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xi1>, tensor<4x4xf32>
  }
  func.func private @cumsum(%arg0: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %0 = call @cumsum_0(%arg0) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    return %0 : tensor<4x4xf32>
  }
  func.func private @cumsum_0(%arg0: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<f32>
    %1 = "stablehlo.reduce_window"(%arg0, %0) <{base_dilations = array<i64: 1, 1>, padding = dense<[[0, 0], [3, 0]]> : tensor<2x2xi64>, window_dilations = array<i64: 1, 1>, window_dimensions = array<i64: 1, 4>, window_strides = array<i64: 1, 1>}> ({
    ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>):
      %2 = stablehlo.add %arg1, %arg2 : tensor<f32>
      stablehlo.return %2 : tensor<f32>
    }) : (tensor<4x4xf32>, tensor<f32>) -> tensor<4x4xf32>
    return %1 : tensor<4x4xf32>
  }
  func.func private @_flip(%arg0: tensor<4x4xf32>) -> tensor<4x4xf32> {
    %0 = stablehlo.reverse %arg0, dims = [0] : tensor<4x4xf32>
    return %0 : tensor<4x4xf32>
  }
  func.func private @fmod(%arg0: tensor<4x4xf32>, %arg1: tensor<f32>) -> tensor<4x4xf32> {
    %0 = stablehlo.convert %arg1 : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<4x4xf32>
    %2 = stablehlo.remainder %arg0, %1 : tensor<4x4xf32>
    return %2 : tensor<4x4xf32>
  }
}
